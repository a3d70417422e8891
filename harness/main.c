/* main.c -- the `arkcos` command: dispatch to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/common/util.h"
#include "harness/common/hmpi.h" /* make MPI=1: commands under mpirun run over its ranks (docs/MPI.md) */

static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *usage;
} commands[] = {
    {"smooth", cmd_smooth,
     "IN.fits [IN2.fits ...] OUT.fits (--fwhm-arcmin F | --kernel-file FILE) "
     "[--cutoff-deg R | --cutoff-rel EPS] ..."},
    {"run", cmd_run, "CONFIG.json [--out DIR] [--resume] [--force]"},
    {"compare-maps", cmd_compare_maps, "A.fits B.fits [--lmax L]"},
    {"compare", cmd_compare,
     "BASELINE.json NEW.json [--threshold F] [--normalize-by auto|none|METHOD] [--clock C]"},
    {"report", cmd_report, "RESULTS.json... -o DIR"},
    {"info", cmd_info, ""},
};

static void usage(FILE *f) {
  fprintf(f, "usage: arkcos COMMAND [ARGS]   (arkcos COMMAND --help for details)\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  arkcos %-12s %s\n", commands[i].name, commands[i].usage);
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("arkcos %s\n", ARKCOS_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name))
      return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "arkcos: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}

int main(int argc, char **argv) {
  signals_install(); /* ulimit -f, SIGINT, SIGTERM: harness/common/util.h */
  hmpi_init(&argc, &argv); /* MPI only when launched by mpirun or srun */
  const int rc = dispatch(argc, argv);
  hmpi_finalize();
  return rc;
}
