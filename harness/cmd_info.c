/* cmd_info.c -- `arkcos info [--json]`: library versions, CPU, GPU; the same
 * metadata that `arkcos run` records in results.json "meta". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/meta.h"

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
    meta_print(stdout, m);
    char why[256], desc[4096];
    int ok = arkcos_gpu_available(why, sizeof why);
    arkcos_gpu_describe(desc, sizeof desc);
    if (desc[0])
      printf("%s%s", desc, desc[strlen(desc) - 1] == '\n' ? "" : "\n");
    else if (!ok)
      printf("GPU backend unavailable: %s\n", why);
  }
  json_decref(m);
  return 0;
}
