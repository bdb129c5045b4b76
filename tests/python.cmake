# The Python package python/dynsweep (docs/analysis.md, "Python") under Debian's
# /usr/bin/python3: DataFrames and the xarray Dataset against `dynsweep
# export`/`show`, installs (.pth, pip --target), the error without h5py.
ds_script_test(python_pkg python_pkg.sh)
