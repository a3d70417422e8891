/* status.c -- exit status of a command for an engine error (status.h). */
#include "harness/common/status.h"

#include "arkcos/arkcos.h"

int exit_status_of(int code) {
  if (code == ARKCOS_OK) return 0;
  /* asking for a GPU where there is none is a usage error, like bad input */
  return (code == ARKCOS_EINVAL || code == ARKCOS_ENODEV) ? 2 : 1;
}
