#!/usr/bin/env bash
# tools/demo.sh -- set up, build and run the demo sweep on all local cores.
# Ends with demo.h5 (in the current directory unless DEMO_STORE is set) and
# the summary table. Ranks: one per core plus the scheduler (rank 0 sleeps
# while it waits, so it does not take a core from the workers).
set -euo pipefail
. "$(dirname "$0")/setup.sh"
ds_install
ds_build
store=${DEMO_STORE:-demo.h5}
if [ -e "$store" ]; then
  echo "dynsweep demo: $store exists; moving it to $store.old" >&2
  mv -f "$store" "$store.old"
fi
np=$(( $(nproc) + 1 ))
# shellcheck disable=SC2046
mpirun $(ds_mpirun_flags) -n "$np" "$DS_BUILD/dynsweep" run "$DS_ROOT/sweeps/demo.yaml" -o "$store"
"$DS_BUILD/dynsweep" ls "$store"
echo "dynsweep demo: store written to $store (inspect with: $DS_BUILD/dynsweep show $store 0)"
