"""python/dynsweep against `dynsweep export` and `dynsweep show` (tests/python_pkg.sh).

    python_pkg.py STORE SUMMARY.csv SHOW_DIR SWEEP.yaml OLD_STORE [OLD_SUMMARY.csv]

SHOW_DIR/<id>.txt is `dynsweep show STORE <id>` of every point. Exits 1 on any
difference (listed)."""
import csv
import math
import os
import re
import sys

import dynsweep
import numpy as np
import pandas as pd
import xarray as xr
import yaml

store, csv_path, show_dir, sweep_path, old_store = sys.argv[1:6]
old_csv = sys.argv[6] if len(sys.argv) > 6 else None  # `dynsweep export OLD_STORE`
fails = []


def check(what, cond):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails.append(what)


def same(a, b):
    """Bit-equal floats (NaN equals NaN), or equal anything else."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


st = dynsweep.open(store)
df = st.summary()
rows = list(csv.DictReader(open(csv_path, newline="")))

# ---- summary() against dynsweep export -----------------------------------------
check("summary has one row per point (%d, export %d)" % (len(df), len(rows)), len(df) == len(rows) > 0)
want_cols = ["id", "combo", "replica", "width", "depth", "lr", "model.type", "init_scale", "status",
             "steps", "final_loss", "min_loss", "final_test_loss", "diverged_step", "wall_s", "rank",
             "outcome", "event_step", "peak_ratio", "plateaus", "plateau_end", "team_size",
             "attempts", "outcome_code", "reason", "steps_to_tol", "lambda0", "eta_crit0",
             "lr_lambda0", "lr_eta_crit", "eta"]
check("summary columns %s" % list(df.columns), list(df.columns) == want_cols)
check("status is Categorical [pending done diverged failed running]",
      isinstance(df.status.dtype, pd.CategoricalDtype) and
      list(df.status.cat.categories) == ["pending", "done", "diverged", "failed", "running"])
# issue 24: "unconverged" appended, so the Dataset's codes 0-5 keep their meaning
check("outcome is Categorical [converged catapult diverged plateaus failed pending unconverged]",
      isinstance(df.outcome.dtype, pd.CategoricalDtype) and
      list(df.outcome.cat.categories) == ["converged", "catapult", "diverged", "plateaus", "failed",
                                          "pending", "unconverged"])
ints = ["id", "combo", "replica", "width", "depth", "steps", "diverged_step", "rank", "event_step",
        "plateaus", "plateau_end", "team_size", "attempts"]
check("integer columns are integers", all(pd.api.types.is_integer_dtype(df[c]) for c in ints))
check("real columns are float64", all(df[c].dtype == np.float64 for c in
      ["lr", "init_scale", "final_loss", "min_loss", "final_test_loss", "wall_s", "peak_ratio", "steps_to_tol",
       "lambda0", "eta_crit0", "lr_lambda0", "lr_eta_crit", "eta"]))
check("text columns are str", all(isinstance(x, str) for c in ("model.type", "reason") for x in df[c]))

diff = []
for i, r in enumerate(rows):
    for k, v in r.items():
        got = df[k].iloc[i]
        if k in ("status", "outcome"):
            ok = str(got) == v
        elif k in ("model.type", "reason"):
            ok = got == v
        elif k == "steps_to_tol":
            ok = (v == "" and math.isnan(got)) or (v != "" and float(v) == got)
        elif k in ints:
            ok = int(v) == int(got)
        else:
            ok = same(float(v), float(got))
        if not ok:
            diff.append((i, k, v, got))
check("every summary value equals the export's, bit for bit (%d cells%s)"
      % (sum(len(r) for r in rows), "; " + repr(diff[:5]) if diff else ""), not diff)

# outcome, event step, plateaus against the header of dynsweep show
head = re.compile(r"outcome (\w+) \(event step (-?\d+), peak ratio (\S+), (\d+) plateau")
shows, bad_out = {}, []
for pid in df.id:
    text = open(os.path.join(show_dir, "%d.txt" % pid)).read()
    m = head.search(text.splitlines()[0])
    row = df[df.id == pid].iloc[0]
    if not m or (m.group(1), int(m.group(2)), int(m.group(4))) != (
            str(row.outcome), int(row.event_step), int(row.plateaus)) or \
            not math.isclose(float(m.group(3)), row.peak_ratio, rel_tol=1e-5):
        bad_out.append((pid, m and m.groups(), str(row.outcome)))
    ser, cur = {}, None
    for line in text.splitlines()[1:]:
        if line.startswith("# "):
            cur = line[2:].split(" [")[0]
            ser[cur] = []
        elif line.strip():
            f = line.split()
            ser[cur].append((int(f[0]), [float(x) for x in f[1:]]))
    shows[int(pid)] = ser
check("outcome, event_step, peak_ratio, plateaus equal dynsweep show's (%s)" % bad_out[:3], not bad_out)
check("the store has converged, unconverged and diverged outcomes (%s)"
      % sorted(set(df.outcome.astype(str))),
      {"converged", "unconverged", "diverged"} <= set(df.outcome.astype(str)))
check("stored codes: 6 for converged/plateaus, 5 for unconverged (issue 24)",
      set(df.outcome_code[df.outcome.isin(["converged", "plateaus"])]) <= {6} and
      set(df.outcome_code[df.outcome == "unconverged"]) == {5})

# ---- to_xarray() against the sweep's grid ----------------------------------------
grid = yaml.safe_load(open(sweep_path))["grid"]
ds = st.to_xarray()
axes = [k for k in grid if k != "replicas"]
check("Dataset dims %s = grid axes + replica" % list(ds.sizes), list(ds.sizes) == axes + ["replica"])
for k in axes:
    want = [str(x) for x in grid[k]] if isinstance(grid[k][0], str) else sorted(grid[k])
    check("coordinate %s = %s" % (k, list(ds[k].values)), list(ds[k].values) == want)
check("coordinate replica = 0..%d" % (grid["replicas"] - 1),
      list(ds.replica.values) == list(range(grid["replicas"])))
check("outcome has CF flag attributes",
      ds.outcome.attrs["flag_meanings"] == "converged catapult diverged plateaus failed pending unconverged" and
      list(ds.outcome.attrs["flag_values"]) == [0, 1, 2, 3, 4, 5, 6])
bad_cell = []
for _, row in df.iterrows():
    cell = ds.sel({k: row[k] for k in axes + ["replica"]})
    for v in ("id", "final_loss", "steps", "status", "outcome", "reason", "attempts", "peak_ratio"):
        want = row[v]
        if v in ("status", "outcome"):
            want = list(df[v].cat.categories).index(str(want))
        if not same(cell[v].item(), want.item() if hasattr(want, "item") else want):
            bad_cell.append((int(row.id), v))
check("every point's cell of the Dataset holds its summary values (%s)" % bad_cell[:4], not bad_cell)
fl = st.grid("final_loss")
check("grid('final_loss') is a DataArray over the axes",
      isinstance(fl, xr.DataArray) and fl.dims == tuple(axes + ["replica"]))

# ---- series() against dynsweep show -------------------------------------------
def want_frame(name, wide, ids=None):
    recs = []
    for pid in sorted(shows):
        if ids is not None and pid not in ids:
            continue
        for step, vals in shows[pid].get(name, []):
            if wide:
                recs += [(pid, step, c, v) for c, v in enumerate(vals)]
            else:
                recs.append((pid, step, vals[0]))
    return pd.DataFrame(recs, columns=["point", "step", "col", "value"] if wide else
                        ["point", "step", "value"])


for name, wide in (("loss", False), ("sv/W1", True), ("layer_fro", True)):
    got, want = st.series(name), want_frame(name, wide)
    eq = list(got.columns) == list(want.columns) and len(got) == len(want) and \
        all((got[c].to_numpy() == want[c].to_numpy()).all() for c in got.columns if c != "value") and \
        np.array_equal(got.value.to_numpy(), want.value.to_numpy(), equal_nan=True)
    check("series(%r): %d tidy rows %s equal dynsweep show" % (name, len(got), list(got.columns)), eq)
sub = st.series("loss", points=[0, 5])
check("series(points=[0, 5]) keeps those points",
      set(sub.point) == {0, 5} and len(sub) == len(want_frame("loss", False, {0, 5})))
try:
    st.series("no_such_series")
    check("an unknown series raises KeyError", False)
except KeyError as e:
    check("an unknown series raises KeyError listing the recorded ones", "loss" in str(e))
check("the numpy API is delegated (table, axes, select, raw)",
      len(st.table()["final_loss"]) == len(df) and [a.name for a in st.axes] == axes and
      len(st.select({"status": "done"})) == int((df.status == "done").sum()) and
      isinstance(st.raw, dynsweep.ArrayStore))

# ---- pandas missing: the frame methods say so -----------------------------------
sys.modules["pandas"] = None  # import pandas now raises ImportError
try:
    st.summary()
    check("summary() without pandas raises MissingDependency", False)
except dynsweep.MissingDependency as e:
    check("summary() without pandas raises MissingDependency naming pandas and %s" % sys.executable,
          "cannot import pandas" in str(e) and sys.executable in str(e) and "python3-pandas" in str(e)
          and isinstance(e, ImportError))
sys.modules["pandas"] = pd

# ---- unfinished points: rows 0-3 made pending/running in a copy --------------------
import h5py  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as tmp:
    cp = os.path.join(tmp, "p.h5")
    shutil.copy(store, cp)
    with h5py.File(cp, "r+") as f:
        s = f["summary"][...]
        s["status"][:4] = [0, 0, 4, 4]
        s["outcome"][:4] = 4
        f["summary"][...] = s
    p = dynsweep.open(cp)
    pdf = p.summary()
    check("pending/running rows: status pending/running, outcome pending (stored code 4)",
          list(pdf.status.astype(str)[:4]) == ["pending", "pending", "running", "running"] and
          list(pdf.outcome.astype(str)[:4]) == ["pending"] * 4 and
          list(pdf.outcome_code[:4]) == [4] * 4 and
          list(pdf.outcome.astype(str)[4:]) == list(df.outcome.astype(str)[4:]))
    pds = p.to_xarray()
    check("... and code 5 (pending) in the Dataset's outcome",
          sorted(pds.outcome.values.ravel().tolist()).count(5) == 4)

# ---- a format-2 store (no attempts field, /points groups) -------------------------
old = dynsweep.open(old_store)
odf = old.summary()
check("format-2 store: summary with attempts 0 (%d rows)" % len(odf),
      len(odf) == old.n > 0 and (odf.attempts == 0).all())
check("format-2 store: to_xarray and series", old.to_xarray().sizes["replica"] >= 1 and
      len(old.series("loss")) > 0)
if old_csv:
    # its done rows carry code 0 ("did not diverge", before issue 24): Python re-classifies
    # them by the rule of outcome.h as `dynsweep export` does (an_open), row for row
    orows = list(csv.DictReader(open(old_csv, newline="")))
    got, want = [str(x) for x in odf.outcome], [r["outcome"] for r in orows]
    check("format-2 store: outcomes equal dynsweep export's (%s)" % sorted(set(want)),
          got == want and len(want) == old.n and
          set(odf.outcome_code[odf.status == "done"]) <= {5, 6})
try:
    dynsweep.open(csv_path)
    check("a CSV file is not a store (StoreError)", False)
except dynsweep.StoreError:
    check("a CSV file is not a store (StoreError)", True)

print("python_pkg.py: %d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
