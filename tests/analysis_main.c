/* analysis_main.c -- stand-alone driver for the analysis room until its
 * subcommands are wired into dynsweep: dynsweep-analysis ls|export|phase ... */
#include <stdio.h>
#include <string.h>

#include "dynsweep/analysis.h"

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "ls")) return ds_cli_ls(argc - 2, argv + 2);
  if (argc >= 2 && !strcmp(argv[1], "export")) return ds_cli_export(argc - 2, argv + 2);
  if (argc >= 2 && !strcmp(argv[1], "phase")) return ds_cli_phase(argc - 2, argv + 2);
  fprintf(stderr, "usage: dynsweep-analysis ls|export|phase STORE ... (--help)\n");
  return 2;
}
