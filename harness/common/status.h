/* status.h -- the exit status of an `arkcos` command for an engine error. */
#ifndef ARKCOS_HARNESS_STATUS_H
#define ARKCOS_HARNESS_STATUS_H

/* 0 for ARKCOS_OK; 2 for bad usage or bad input (ARKCOS_EINVAL) and for a
 * GPU asked for where there is none (ARKCOS_ENODEV); 1 for any other
 * (runtime) failure. */
int exit_status_of(int code);

#endif
