#!/usr/bin/env bash
# python/dynsweep, the importable package, under Debian's /usr/bin/python3:
# summary() / to_xarray() / series() against `dynsweep export` and `dynsweep
# show` (tests/python_pkg.py), the documented installs (PYTHONPATH, a .pth
# file in a user site dir, pip --target from the source tree, offline), the
# tools/dynsweep_store.py shim, and the clear ImportError under an interpreter
# that has no h5py. Skips (exit 0) without python3-pandas/python3-xarray.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
PKG=$DS_SRC/python
if ! $PY -c "import h5py, numpy, yaml, pandas, xarray" 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks h5py, numpy, yaml, pandas or xarray (apt-get install python3-h5py python3-numpy python3-yaml python3-pandas python3-xarray)"
  exit 0
fi

drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
"$DYNSWEEP" export "$T/s.h5" -o "$T/summary.csv"
mkdir "$T/show"
n=$("$PY" -c "import h5py,sys; print(len(h5py.File(sys.argv[1],'r')['summary']))" "$T/s.h5")
for i in $(seq 0 $((n - 1))); do "$DYNSWEEP" show "$T/s.h5" "$i" > "$T/show/$i.txt"; done

"$DYNSWEEP" export "$DS_SRC/tests/data/store_v2.h5" -o "$T/old.csv"

cd "$T"  # nothing of the source tree on sys.path but what a test puts there
check "summary/xarray/series vs export and show ($n points)" \
  env PYTHONPATH="$PKG" $PY "$DS_SRC/tests/python_pkg.py" "$T/s.h5" "$T/summary.csv" "$T/show" \
  "$DS_SRC/tests/sweeps/small.yaml" "$DS_SRC/tests/data/store_v2.h5" "$T/old.csv"

# tools/dynsweep_store.py is the package's module (one implementation)
check "tools/dynsweep_store is dynsweep.store" $PY -c "
import sys; sys.path.insert(0, '$DS_SRC/tools')
import dynsweep_store, dynsweep.store
assert dynsweep_store is dynsweep.store, dynsweep_store
assert dynsweep.store.__file__.startswith('$PKG/'), dynsweep.store.__file__
assert dynsweep_store.Store('$T/s.h5').n == $n"

# install 1: a .pth file in the user site directory (PYTHONUSERBASE)
usite=$(PYTHONUSERBASE="$T/ub" $PY -m site --user-site)
mkdir -p "$usite"
echo "$PKG" > "$usite/dynsweep.pth"
check "import dynsweep through a .pth file ($usite)" \
  env PYTHONUSERBASE="$T/ub" $PY -c "import dynsweep; assert dynsweep.__file__ == '$PKG/dynsweep/__init__.py'; print(dynsweep.open('$T/s.h5'))"
# install 1b: a .pth file in any directory given to site.addsitedir
mkdir "$T/sd" && echo "$PKG" > "$T/sd/dynsweep.pth"
check "import dynsweep through site.addsitedir + .pth" \
  $PY -c "import site; site.addsitedir('$T/sd'); import dynsweep; assert dynsweep.__file__.startswith('$PKG/')"

# install 2: pip from the source tree, offline, no dependencies fetched
if $PY -m pip --version >/dev/null 2>&1; then
  cp -r "$PKG" "$T/src"   # pip/setuptools write build files next to the sources
  check "pip install --no-deps --no-build-isolation --no-index --target" \
    $PY -m pip install -q --no-deps --no-build-isolation --no-index --target "$T/site" "$T/src"
  check "the pip-installed package imports and reads the store" \
    env PYTHONPATH="$T/site" $PY -c "
import dynsweep; assert dynsweep.__file__ == '$T/site/dynsweep/__init__.py', dynsweep.__file__
df = dynsweep.open('$T/s.h5').summary(); assert len(df) == $n"
else
  echo "skip: pip check: /usr/bin/python3 has no pip (apt-get install python3-pip)"
fi

# an interpreter without h5py: a clear ImportError, not a bare ModuleNotFoundError
errcheck() { # WHAT EXE(expected in the message) CMD...
  local what=$1 exe=$2; shift 2
  set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
  if [ $rc -ne 0 ] && grep -q "MissingDependency: dynsweep cannot import h5py" "$T/err" &&
     grep -qF "in this interpreter: $exe " "$T/err" &&
     grep -q "needs Debian's /usr/bin/python3 with python3-h5py and python3-numpy" "$T/err" &&
     grep -q "python3-pandas and python3-xarray" "$T/err" &&
     grep -q "apt-get install python3-h5py python3-numpy python3-yaml python3-pandas python3-xarray" "$T/err"
  then ok "$what"; else bad "$what (exit $rc)"; cat "$T/err" >&2; fi
}
errcheck "no site-packages (python3 -I -S): the message names the interpreter and apt-get line" \
  /usr/bin/python3 $PY -I -S -c "import sys; sys.path.insert(0, '$PKG'); import dynsweep"
if $PY -m venv --without-pip "$T/venv" 2>/dev/null; then
  errcheck "a venv without system packages: the message names its python" \
    "$T/venv/bin/python" env PYTHONPATH="$PKG" "$T/venv/bin/python" -c "import dynsweep"
  errcheck "the tools/dynsweep_store.py shim in that venv: the same message" \
    "$T/venv/bin/python" env PYTHONPATH="$DS_SRC/tools" "$T/venv/bin/python" -c "import dynsweep_store"
  grep -q "this Python is a virtual environment" "$T/err" && ok "the venv is told to use /usr/bin/python3" ||
    bad "the venv message does not say to use /usr/bin/python3"
else
  echo "skip: venv check: python3 -m venv unavailable (apt-get install python3-venv)"
fi
report
