/* submit.h -- `dynsweep submit`: write a Slurm job script for a sweep, submit
 * it with sbatch and keep the sweep going across time limits. */
#ifndef DYNSWEEP_SUBMIT_H
#define DYNSWEEP_SUBMIT_H
#include <stdio.h>
/* The whole subcommand: argv are the arguments after "submit". Returns the
 * process exit code (0 ok, 2 bad input, 1 other failure). */
int ds_cli_submit(int argc, char **argv);
extern const char *ds_usage_submit;
/* `dynsweep chain STORE begin|end ...`: the job chain file STORE.chain.tsv
 * that the job scripts keep (src/submit/chain.c). */
int ds_cli_chain(int argc, char **argv);
/* Prints the chain of STORE (status); with required, also says when there is
 * none. Returns an exit code (2: malformed chain file). */
int ds_chain_print(const char *store, FILE *out, int required);
#endif
