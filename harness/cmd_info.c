#include <stdio.h>
#include "harness/commands.h"
int cmd_info(int argc, char **argv) {
  (void)argc;
  fprintf(stderr, "arkcos %s: not implemented yet\n", argv[0]);
  return 1;
}
