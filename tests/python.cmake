# The Python package python/dynsweep (docs/analysis.md, "Python") under Debian's
# /usr/bin/python3: DataFrames and the xarray Dataset against `dynsweep
# export`/`show`, installs (.pth, pip --target), the error without h5py.
ds_script_test(python_pkg python_pkg.sh)
# DS_SUMMARY_COLUMNS (store.h) against the /summary a run writes and the package's SUMMARY_FIELDS
ds_script_test(summary_columns summary_columns.sh)
