/* build_info.c -- what was built: the version and the source's git commit,
 * fixed when the library was compiled (see arkcos.h). The commit comes from
 * $(BUILD)/gen/arkcos_build_info.h, which the Makefile makes with
 * scripts/build-info.sh; nothing here asks git at run time. */
#include "arkcos/arkcos.h"

#include "arkcos_build_info.h"

const char *arkcos_version(void) { return ARKCOS_VERSION; }

const char *arkcos_build_commit(void) { return ARKCOS_BUILD_COMMIT; }

int arkcos_build_dirty(void) { return ARKCOS_BUILD_DIRTY; }
