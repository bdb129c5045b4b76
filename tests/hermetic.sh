#!/usr/bin/env bash
# hermetic.sh -- the suite does not depend on the environment it inherits:
# every registered test starts through tests/env.sh, and env.sh removes a
# hostile environment and sets the baseline (tests/env.sh says which).
. "$(dirname "$0")/lib.sh"
tf="$DS_BUILD/tests/CTestTestfile.cmake"
check "ctest's test file exists ($tf)" test -s "$tf"
n=$(grep -c '^add_test' "$tf")
missing=$(grep '^add_test' "$tf" | grep -v 'tests/env.sh' | sed -E 's/^add_test\(([^ ]+) .*/\1/' | tr '\n' ' ' || true)
check "all $n tests start through tests/env.sh (not: ${missing:-none})" test -z "$missing"
check "the suite has tests ($n)" test "$n" -gt 10

# a hostile environment, as a module system, a Slurm job or a shell leave it
out=$(env OPENBLAS_CORETYPE=Prescott OPENBLAS_VERBOSE=2 OMP_NUM_THREADS=7 GOTO_NUM_THREADS=3 \
  OMPI_MCA_btl=self OMPI_MCA_pml=ucx PMIX_NAMESPACE=x SLURM_JOB_ID=123 SLURM_NTASKS=9 \
  SLURM_MEM_PER_CPU=10 SBATCH_TIMELIMIT=1 DYNSWEEP_NO_REEXEC=1 DYNSWEEP_SVD=scalapack \
  HDF5_USE_FILE_LOCKING=FALSE PYTHONPATH=/nowhere LC_ALL=de_DE.UTF-8 LANG=fr_FR LC_NUMERIC=de_DE \
  TERM=xterm-256color COLUMNS=20 TZ=Asia/Tokyo \
  bash "$DS_SRC/tests/env.sh" env)
left=$(echo "$out" | grep -E '^(OPENBLAS_CORETYPE|OPENBLAS_VERBOSE|OMP_|GOTO_|OMPI_MCA_btl|OMPI_MCA_pml|PMIX_|SLURM_|SBATCH_|DYNSWEEP_|HDF5_|PYTHON|LC_NUMERIC|TERM|COLUMNS)' | tr '\n' ' ' || true)
check "env.sh removes the hostile variables (left: ${left:-none})" test -z "$left"
check "env.sh sets the baseline" bash -c "echo '$out' | grep -qx OPENBLAS_NUM_THREADS=1 && \
  echo '$out' | grep -qx LC_ALL=C.UTF-8 && echo '$out' | grep -qx TZ=UTC && \
  echo '$out' | grep -qx OMPI_ALLOW_RUN_AS_ROOT=1"
out=$(env DS_TEST_KEEP=DYNSWEEP_SVD DYNSWEEP_SVD=scalapack DYNSWEEP_NO_REEXEC=1 bash "$DS_SRC/tests/env.sh" env)
check "DS_TEST_KEEP keeps what a test's ENVIRONMENT names" bash -c \
  "echo '$out' | grep -qx DYNSWEEP_SVD=scalapack && ! echo '$out' | grep -q DYNSWEEP_NO_REEXEC"
check "stdin is not a terminal under env.sh" bash "$DS_SRC/tests/env.sh" bash -c '! test -t 0'
report
