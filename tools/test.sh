#!/usr/bin/env bash
# tools/test.sh -- set up, build and run the whole test suite (ctest), then the
# non-Slurm part of the suite again under AddressSanitizer + UBSan
# (tests/sanitize.sh: its own build in build-asan/; DS_SKIP_SANITIZE=1 skips
# it) and under a hostile environment, as a cluster's module system, a Slurm
# job or a developer's shell leave one: a slow OpenBLAS kernel forced,
# OPENBLAS_NUM_THREADS unset, OMP/Open MPI/Slurm variables, a foreign locale,
# a terminal type. Every test starts through tests/env.sh, which must make
# that environment irrelevant (tests/hermetic.sh checks the wiring).
set -euo pipefail
. "$(dirname "$0")/setup.sh"
ds_install test
ds_build
(cd "$DS_BUILD" && ctest --output-on-failure -j 2 "$@")
if [ "${DS_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "dynsweep test: the suite again under AddressSanitizer + UBSan (tests/sanitize.sh)," \
       "in a hostile environment"
  env -u OPENBLAS_NUM_THREADS OPENBLAS_CORETYPE=Prescott OMP_NUM_THREADS=3 GOTO_NUM_THREADS=3 \
    OMPI_MCA_btl_base_verbose=100 OMPI_MCA_rmaps_base_mapping_policy=socket \
    SLURM_JOB_ID=4242 SLURM_JOBID=4242 SLURM_NTASKS=7 SLURM_PROCID=3 SLURM_MEM_PER_CPU=100 \
    SLURM_CPUS_ON_NODE=1 DYNSWEEP_NO_REEXEC=1 HDF5_USE_FILE_LOCKING=FALSE PYTHONPATH=/nonexistent \
    LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 LC_NUMERIC=de_DE.UTF-8 TZ=Pacific/Chatham \
    TERM=xterm-256color COLUMNS=20 \
    bash "$DS_ROOT/tests/sanitize.sh"
fi
