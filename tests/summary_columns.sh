#!/usr/bin/env bash
# One definition of the summary columns (issue 25): DS_SUMMARY_COLUMNS in
# include/dynsweep/store.h makes ds_summary_row and the HDF5 compound of
# /summary (src/store/store_h5.c). This checks the file a run writes against
# it, field by field (name and type, in order), and that the Python
# package's SUMMARY_FIELDS (the columns every format since 1 has) are its
# first columns, in order.
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "skip: no h5py for /usr/bin/python3"; exit 0; }
drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
check "the columns of /summary are DS_SUMMARY_COLUMNS, names and types in order" \
  "$PY" - "$DS_SRC" "$T/s.h5" <<'PY'
import re, sys, h5py
src, store = sys.argv[1], sys.argv[2]
text = open(f"{src}/include/dynsweep/store.h").read()
body = text[text.index("#define DS_SUMMARY_COLUMNS(X)"):]
body = body[:body.index("#define DS_SUMMARY_CTYPE_I")]
body = re.sub(r"/\*.*?\*/", " ", body, flags=re.S)
cols = re.findall(r"X\((\w+), ([Iids])\)", body)
want = {"I": ("i", 8), "i": ("i", 4), "d": ("f", 8), "s": ("S", 96)}
with h5py.File(store, "r") as f:
    dt = f["summary"].dtype
got = [(n, dt.fields[n][0]) for n in dt.names]
print(f"{len(cols)} columns defined, {len(got)} in /summary")
bad = len(cols) != len(got)
for (name, kind), (gname, gt) in zip(cols, got):
    k, size = want[kind]
    if name != gname or gt.kind != k or gt.itemsize != size:
        print(f"  {name} ({kind}) vs /summary {gname} ({gt})")
        bad = True
sys.path.insert(0, f"{src}/python")
from dynsweep.store import SUMMARY_FIELDS
if tuple(n for n, _ in cols[:len(SUMMARY_FIELDS)]) != tuple(SUMMARY_FIELDS):
    print("  python/dynsweep/store.py SUMMARY_FIELDS is not the first columns:", SUMMARY_FIELDS)
    bad = True
sys.exit(1 if bad else 0)
PY
report
