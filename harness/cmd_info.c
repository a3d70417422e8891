/* cmd_info.c -- `arkcos info [--json]`: library versions, CPU, GPU; the same
 * metadata that `arkcos run` records in results.json "meta". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/common/meta.h"

/* The backend that --backend auto takes on this machine, in plain words. */
static void print_backend(void) {
  char why[256] = "";
  if (arkcos_gpu_available(why, sizeof why)) {
    arkcos_gpu_info gi;
    arkcos_gpu_query(&gi);
    printf("backend     GPU (CUDA device 0: %s) for --backend auto; CPU with --backend cpu\n",
           gi.ndevices > 0 ? gi.devices[0].name : "?");
  } else if (!strcmp(why, "built without CUDA")) {
    printf("backend     CPU backend (built without CUDA)\n");
  } else {
    const char *prefix = "no CUDA device found: ";
    const char *reason = strncmp(why, prefix, strlen(prefix)) ? why : why + strlen(prefix);
    printf("backend     no CUDA device: CPU backend (%s)\n", reason[0] ? reason : "none found");
  }
}

int cmd_info(int argc, char **argv) {
  int as_json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      as_json = 1;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: arkcos info [--json]\n"
             "  Versions of arkcos and its libraries, CPU, memory, OS, compiler,\n"
             "  CUDA and GPUs: the \"meta\" that `arkcos run` records.\n");
      return 0;
    } else {
      fprintf(stderr, "arkcos info: unknown argument '%s'\nusage: arkcos info [--json]\n",
              argv[i]);
      return 2;
    }
  }
  json_t *m = meta_collect(0, NULL);
  json_object_del(m, "command");
  if (as_json) {
    char *s = json_dumps(m, JSON_INDENT(2));
    if (s) puts(s);
    free(s);
  } else {
    /* meta_print has the CUDA versions and the devices already; the one
     * line it lacks is what --backend auto will use here. */
    meta_print(stdout, m);
    print_backend();
  }
  json_decref(m);
  return 0;
}
