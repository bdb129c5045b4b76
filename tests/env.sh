#!/usr/bin/env bash
# tests/env.sh -- run one test in a known environment, whatever the caller's.
#
#   bash tests/env.sh COMMAND [ARGS...]      (every ctest test is started so)
#
# A test must not pass or fail because of the environment it inherits: a
# cluster's module system or a developer's shell may export
# OPENBLAS_CORETYPE, OMP_NUM_THREADS, OMPI_MCA_*, SLURM_* (inside a job), a
# locale, a terminal. This wrapper removes every variable that changes how
# dynsweep, OpenBLAS, LIBXSMM, Open MPI/PMIx, Slurm, HDF5 or Python behave, then sets
# the baseline the suite is written for:
#   OPENBLAS_NUM_THREADS=1, Open MPI's root and oversubscribe permissions,
#   LC_ALL=LANG=C.UTF-8, TZ=UTC, no terminal (TERM unset, stdin /dev/null).
# A test that needs another value sets it itself (e.g. cli.sh runs dynsweep
# with OPENBLAS_CORETYPE set on purpose). Variables a test's ctest ENVIRONMENT
# sets that match the patterns below survive when named in DS_TEST_KEEP
# (space-separated), e.g. "DS_TEST_KEEP=DYNSWEEP_SVD;DYNSWEEP_SVD=scalapack".
# Kept: PATH, HOME, TMPDIR, the sanitizers' *SAN_OPTIONS, the suite's own
# DYNSWEEP (the binary), DS_SRC, DS_BUILD and DS_* knobs.
# tools/test.sh runs the suite a second time with a hostile environment
# (slow OpenBLAS kernel, OPENBLAS_NUM_THREADS unset, Slurm job variables, a
# foreign locale, a terminal type, Open MPI MCA settings) to prove this.
keep=" ${DS_TEST_KEEP:-} "
while IFS= read -r v; do
  case " $keep " in *" $v "*) continue ;; esac
  case $v in
    OPENBLAS_* | GOTO_* | GOTOBLAS_* | OMP_* | KMP_* | MKL_* | BLIS_* | LIBXSMM_* | \
    OMPI_* | PMIX_* | PRTE_* | ORTE_* | OPAL_* | HWLOC_* | MPICH_* | I_MPI_* | \
    SLURM_* | SBATCH_* | SALLOC_* | SRUN_* | SQUEUE_* | SACCT_* | SINFO_* | SCONTROL_* | \
    DYNSWEEP_* | HDF5_* | H5_* | PYTHON* | MPLBACKEND | MPLCONFIGDIR | \
    LC_* | LANG | LANGUAGE | TERM | COLUMNS | LINES | TZ | CUDA_VISIBLE_DEVICES)
      unset "$v" ;;
  esac
done < <(compgen -e)
export OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export LC_ALL=C.UTF-8 LANG=C.UTF-8 TZ=UTC
exec "$@" </dev/null
