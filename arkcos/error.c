#include <stdarg.h>
#include <stdio.h>

#include "arkcos/arkcos.h"

int arkcos_fail(arkcos_error *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}
