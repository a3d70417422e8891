/* commands.h -- one entry point per `arkcos` subcommand (argv[0] is the
 * subcommand name). Each returns the process exit status. */
#ifndef ARKCOS_HARNESS_COMMANDS_H
#define ARKCOS_HARNESS_COMMANDS_H
int cmd_smooth(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compare_maps(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);
#endif
