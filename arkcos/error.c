#include <stdarg.h>
#include <stdio.h>

#include "arkcos/arkcos.h"
#include "arkcos/plan_internal.h"

int arkcos_vfail(arkcos_error *err, int code, const char *fmt, va_list ap) {
  if (err) {
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->code = code;
  }
  return code;
}

int arkcos_fail(arkcos_error *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  arkcos_vfail(err, code, fmt, ap);
  va_end(ap);
  return code;
}
