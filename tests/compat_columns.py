"""compat_columns.py SRC DYNSWEEP STORE -- the summary columns, one definition (issue 25).

The columns of /summary are written down in several places; this check reads each of
them and fails, naming the place, when one of them misses or reorders a column:

  writer  the compound type of STORE's /summary (a store the binary under test just
          made): names, order, HDF5 types -- the reference every other place is held to
  C       the members of ds_summary_row (include/dynsweep/*.h), in order, with types
  docs    the field table of docs/store.md "/summary", in order, with types
  python  dynsweep.store.SUMMARY_FIELDS + "outcome" + the optional fields of
          dynsweep.frames._DEFAULTS (with their dtypes), in order; and every column in
          the numpy table() and frames columns() of STORE
  ls      `dynsweep ls STORE --add <every column>` shows them all (the analysis
          table's field names, src/analysis/table.c), and `ls --help` names them
  export  `dynsweep export STORE`'s header holds every column, and its summary
          columns are those `export --help` lists, in that order

Exit 0 if all agree, 1 otherwise.
"""
import os
import re
import subprocess
import sys

src, binary, store_path = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "python"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from dynsweep import frames, store  # noqa: E402

problems = []


def bad(where, msg):
    problems.append("%s: %s" % (where, msg))


def same_list(where, got, want):
    """got vs want (lists of (name, type) or names): says what is missing, extra, moved."""
    if got == want:
        return True
    gn = [g[0] if isinstance(g, tuple) else g for g in got]
    wn = [w[0] if isinstance(w, tuple) else w for w in want]
    miss = [n for n in wn if n not in gn]
    extra = [n for n in gn if n not in wn]
    if miss:
        bad(where, "misses %s" % ", ".join(miss))
    if extra:
        bad(where, "has %s, which the writer does not write" % ", ".join(extra))
    if not miss and not extra:
        if gn != wn:
            bad(where, "order %s, the writer's %s" % (",".join(gn), ",".join(wn)))
        else:
            for g, w in zip(got, want):
                if g != w:
                    bad(where, "%s is %s, the writer writes %s" % (g[0], g[1], w[1]))
    return False


# ---- writer: the file's compound type -------------------------------------------------
with h5py.File(store_path, "r") as f:
    dt = f["summary"].dtype
writer = [(n, dt.fields[n][0].str) for n in dt.names]
names = [n for n, _ in writer]

# ---- C: ds_summary_row ------------------------------------------------------------------
CT = {"int64_t": "<i8", "int32_t": "<i4", "double": "<f8"}
body = None
for root, _, files in os.walk(os.path.join(src, "include")):
    for fn in files:
        text = re.sub(r"/\*.*?\*/", "", open(os.path.join(root, fn)).read(), flags=re.S)
        m = re.search(r"typedef struct\s*(?:\w+\s*)?\{((?:[^{}])*)\}\s*ds_summary_row\s*;", text)
        if m:
            body = m.group(1)
xm = xlen = None
for root, _, files in os.walk(os.path.join(src, "include")):
    for fn in files:
        text = open(os.path.join(root, fn)).read()
        xm = xm or re.search(r"#define DS_SUMMARY_COLUMNS\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
        xlen = xlen or re.search(r"#define DS_SUMMARY_REASON_LEN\s+(\d+)", text)
if body is not None and "DS_SUMMARY_COLUMNS" in body:
    # ds_summary_row made from the X-macro list DS_SUMMARY_COLUMNS (store.h)
    if xm is None or xlen is None:
        bad("C", "ds_summary_row uses DS_SUMMARY_COLUMNS but its #define (or DS_SUMMARY_REASON_LEN) "
                 "is not found under include/ (update this check)")
    else:
        xbody = re.sub(r"/\*.*?\*/", "", xm.group(1).replace("\\\n", " "), flags=re.S)
        XT = {"I": "<i8", "i": "<i4", "d": "<f8", "s": "|S" + xlen.group(1)}
        c = [(n, XT.get(k, k)) for n, k in re.findall(r"X\(\s*(\w+)\s*,\s*(\w+)\s*\)", xbody)]
        same_list("C ds_summary_row (DS_SUMMARY_COLUMNS)", c, writer)
elif body is None:
    bad("C", "no `typedef struct {...} ds_summary_row;` under include/ (update this check)")
else:
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    body = re.sub(r"//[^\n]*", "", body)
    c = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        m = re.match(r"(\w+)\s+(.*)$", decl, re.S)
        ctype, rest = m.group(1), m.group(2)
        for v in rest.split(","):
            v = v.strip()
            a = re.match(r"(\w+)\s*\[\s*(\d+)\s*\]", v)
            if a and ctype == "char":
                c.append((a.group(1), "|S" + a.group(2)))
            else:
                c.append((v, CT.get(ctype, ctype)))
    same_list("C ds_summary_row", c, writer)

# ---- docs/store.md ------------------------------------------------------------------
DT = {"int64": "<i8", "int32": "<i4", "float64": "<f8"}
doc = open(os.path.join(src, "docs", "store.md")).read()
m = re.search(r"## `/summary`.*?\n\| field \| type \| meaning \|\n\|[-|]+\|\n((?:\|[^\n]*\n)+)", doc, re.S)
if not m:
    bad("docs/store.md", "no field table under \"## `/summary`\"")
else:
    d = []
    for line in m.group(1).splitlines():
        cells = [x.strip() for x in line.strip().strip("|").split("|")]
        name, typ = cells[0].strip("`"), cells[1]
        s = re.match(r"string, (\d+) bytes", typ)
        d.append((name, "|S" + s.group(1) if s else DT.get(typ, typ)))
    same_list("docs/store.md /summary table", d, writer)
    m = re.search(r"Fields, packed in this order \((\d+) bytes", doc)
    if m and int(m.group(1)) != dt.itemsize:
        bad("docs/store.md", "says %s bytes per row, the writer packs %d" % (m.group(1), dt.itemsize))

# ---- python -----------------------------------------------------------------------------
if not hasattr(store, "SUMMARY_FIELDS") or not hasattr(frames, "_DEFAULTS"):
    bad("python", "no dynsweep.store.SUMMARY_FIELDS or dynsweep.frames._DEFAULTS (update this check)")
py = list(getattr(store, "SUMMARY_FIELDS", ())) + ["outcome"] + \
    [k for k, _, _ in getattr(frames, "_DEFAULTS", ())]
same_list("python SUMMARY_FIELDS + outcome + frames._DEFAULTS", py, names)
wt = dict(writer)
for k, typ, _ in getattr(frames, "_DEFAULTS", ()):
    if k in wt and np.dtype(typ).str != wt[k]:
        bad("python frames._DEFAULTS", "%s is %s, the writer writes %s" % (k, np.dtype(typ).str, wt[k]))
t = store.Store(store_path).table()
miss = [n for n in names if n not in t]
if miss:
    bad("python dynsweep.store.Store.table()", "misses %s" % ", ".join(miss))
cols = frames.Store(store_path).columns()
miss = [n for n in names if n not in cols]
if miss:
    bad("python dynsweep.frames.Store.columns()", "misses %s" % ", ".join(miss))


# ---- dynsweep ls / export ----------------------------------------------------------------
def run(*args):
    p = subprocess.run([binary] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return p.returncode, p.stdout, p.stderr


rc, out, err = run("ls", store_path, "--add", ",".join(names))
if rc != 0:
    bad("dynsweep ls --add", "exit %d: %s" % (rc, err.strip()[:300]))
else:
    header = out.splitlines()[0].split()
    shown = {"id": "point", "replica": "rep"}  # ls's short headers
    miss = [n for n in names if n not in header and shown.get(n) not in header]
    if miss:
        bad("dynsweep ls --add (src/analysis/table.c)", "does not show %s" % ", ".join(miss))
rc, out, err = run("ls", "--help")
helptext = out + err
m = re.search(r"  summary: (.*?)\n  normalised", helptext, re.S)
listed = re.findall(r"[a-z_0-9]+", m.group(1).split("(attempts")[0]) if m else []
miss = [n for n in names if n not in listed and n not in ("width", "depth", "lr", "init_scale")]
if not m or miss:
    bad("dynsweep ls --help (column names)", "does not name %s" % ", ".join(miss or ["any"]))
rc, out, err = run("export", store_path)
if rc != 0:
    bad("dynsweep export", "exit %d: %s" % (rc, err.strip()[:300]))
else:
    header = out.splitlines()[0].split(",")
    miss = [n for n in names if n not in header]
    if miss:
        bad("dynsweep export header (src/analysis/export.c)", "misses %s" % ", ".join(miss))
    rc, hout, herr = run("export", "--help")
    m = re.search(r"\n  (status,outcome,[a-z_,\n ]*?)\n  and,", hout + herr)
    if not m:
        bad("dynsweep export --help", "no summary column list (status,outcome,...)")
    else:
        doc_cols = [x for x in re.split(r"[,\s]+", m.group(1)) if x]
        i = header.index("status") if "status" in header else -1
        got = header[i:i + len(doc_cols)]
        if got != doc_cols:
            bad("dynsweep export", "header %s, its --help says %s" % (",".join(got), ",".join(doc_cols)))

for p in problems:
    print("compat_columns: %s" % p)
if problems:
    print("compat_columns: the summary columns disagree (%d problems)" % len(problems))
    sys.exit(1)
print("compat_columns: %d summary columns (%d bytes a row) agree: writer, C ds_summary_row, "
      "docs/store.md, python, ls, export" % (len(names), dt.itemsize))
