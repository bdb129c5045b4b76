/* analysis.h -- post-hoc analysis of a store from the command line (no Python):
 * `dynsweep ls`, `dynsweep export`, `dynsweep phase` (docs/analysis.md).
 *
 * Each ds_cli_* is a whole subcommand: argv holds the arguments after the
 * subcommand name (argv[0] is the first argument, not "ls"). It prints its
 * usage for -h/--help (exit 0), reports errors on stderr as "dynsweep: ..."
 * and returns the process exit code: 0 ok, 2 bad input (arguments, unknown
 * column names, not a store), 1 other failures. No MPI is needed. */
#ifndef DYNSWEEP_ANALYSIS_H
#define DYNSWEEP_ANALYSIS_H

extern const char *const ds_usage_ls;
extern const char *const ds_usage_export;
extern const char *const ds_usage_phase;

/* dynsweep ls STORE [--where COND,...] [--sort KEY,...] [--limit N] */
int ds_cli_ls(int argc, char **argv);
/* dynsweep export STORE [--format csv|tsv] [--series NAME] [--where ...]
 *                 [--params PATH,...] [-o FILE] */
int ds_cli_export(int argc, char **argv);
/* dynsweep phase STORE --x COL --y COL [--metric M] [--agg mean|min|max|count]
 *                [--where ...] [--digits N] */
int ds_cli_phase(int argc, char **argv);
#endif
