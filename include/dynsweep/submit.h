/* submit.h -- `dynsweep submit`: write a Slurm job script for a sweep, submit
 * it with sbatch and keep the sweep going across time limits. */
#ifndef DYNSWEEP_SUBMIT_H
#define DYNSWEEP_SUBMIT_H
#include <stdio.h>
/* The whole subcommand: argv are the arguments after "submit". Returns the
 * process exit code (0 ok, 2 bad input, 1 other failure). */
int ds_cli_submit(int argc, char **argv);
extern const char *ds_usage_submit;
#endif
