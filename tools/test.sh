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
# The sanitizer pass's environment: what a cluster's module system, a Slurm job
# or a developer's shell leave behind (see the top of this file).
hostile() {
  env -u OPENBLAS_NUM_THREADS OPENBLAS_CORETYPE=Prescott OMP_NUM_THREADS=3 GOTO_NUM_THREADS=3 \
    OMPI_MCA_btl_base_verbose=100 OMPI_MCA_rmaps_base_mapping_policy=socket \
    SLURM_JOB_ID=4242 SLURM_JOBID=4242 SLURM_NTASKS=7 SLURM_PROCID=3 SLURM_MEM_PER_CPU=100 \
    SLURM_CPUS_ON_NODE=1 DYNSWEEP_NO_REEXEC=1 HDF5_USE_FILE_LOCKING=FALSE PYTHONPATH=/nonexistent \
    LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 LC_NUMERIC=de_DE.UTF-8 TZ=Pacific/Chatham \
    TERM=xterm-256color COLUMNS=20 \
    "$@"
}
# The sanitizer build (build-asan/, ~2 min of both cores) runs at nice 19, one job,
# while the plain pass runs its tests, on the cycles they leave idle (the Slurm
# tests wait on their clusters, the kill tests on their timeouts), so the
# sanitizer pass below starts on a built tree.
asan_pid=
if [ "${DS_SKIP_SANITIZE:-0}" != 1 ]; then
  asan_log=$(mktemp)
  # its own process group (setsid), so that a failing plain pass stops all of it
  # one compiler at a time: the plain pass's MPI ranks yield the cores to each other
  hostile setsid nice -n 19 env DS_BUILD_JOBS=1 bash "$DS_ROOT/tests/sanitize.sh" --build-only >"$asan_log" 2>&1 &
  asan_pid=$!
  trap '[ -n "$asan_pid" ] && kill -- "-$asan_pid" 2>/dev/null; rm -f "$asan_log"' EXIT
fi
# two lanes for the tests that work and a third for the ones that wait
# (tests/CMakeLists.txt, "Lanes"; tests/resources.json holds the 2 cores)
(cd "$DS_BUILD" && ctest --output-on-failure -j 3 --resource-spec-file "$DS_ROOT/tests/resources.json" "$@")
if [ -n "$asan_pid" ]; then
  # a failed build is built (and reported) again by the pass itself
  if ! wait "$asan_pid"; then
    echo "dynsweep test: the niced sanitizer build failed; building again:"
    cat "$asan_log"
  fi
  asan_pid=
  echo "dynsweep test: the suite again under AddressSanitizer + UBSan (tests/sanitize.sh)," \
       "in a hostile environment"
  hostile bash "$DS_ROOT/tests/sanitize.sh"
fi
