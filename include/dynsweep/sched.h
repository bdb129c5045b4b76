/* sched.h -- `dynsweep run`: rank 0 hands points to workers as they free up
 * (longest estimated first), receives their trajectories and writes the
 * store; with one rank, rank 0 does the work itself. */
#ifndef DYNSWEEP_SCHED_H
#define DYNSWEEP_SCHED_H
#include <mpi.h>
#include "dynsweep/config.h"

typedef struct {
  const char *store_path;
  int quiet;           /* no per-point progress lines */
  const char *library_versions; /* recorded in the store */
} ds_run_opts;

/* Collective over comm. Every rank returns the same status code. */
int ds_sched_run(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm);

#endif
