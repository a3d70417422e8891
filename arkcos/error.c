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

int arkcos_exit_status(int code) {
  if (code == ARKCOS_OK) return 0;
  /* asking for a GPU where there is none is a usage error, like bad input */
  return (code == ARKCOS_EINVAL || code == ARKCOS_ENODEV) ? 2 : 1;
}
