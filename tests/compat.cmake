# compat (issue 25): the stores of the release before the restructuring
# (tests/data/compat/, made by tests/compat_make.sh) against the same sweeps run
# by this build, point by point and pixel by pixel, provenance aside
# (tests/compat_diff.py); the binary continues and reads the old stores; the
# summary columns agree in the writer, ds_summary_row, docs, Python, ls and
# export (tests/compat_columns.py); negative checks on altered copies (~15 s).
# Exit 77 (skipped): no h5py, or other kernels and no git history to build the
# reference commit from.
ds_script_test(compat compat.sh)
set_tests_properties(compat PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS "integration;store")
