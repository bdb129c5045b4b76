#!/usr/bin/python3
"""Checks tools/dynsweep_store.py against the store read directly with h5py.

    test_report_store.py check STORE OUTDIR   table/records/series vs h5py; writes
                                               OUTDIR/eig.h5: a copy with synthetic
                                               hessian_top / ntk_top series
    test_report_store.py live STORE PID        read STORE repeatedly while process PID
                                               (a running sweep) lives
"""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from dynsweep_store import Store, StoreError, read_points  # noqa: E402


def add_series3(g, pid, name, step, value, unit, definition):
    """Appends a scalar series of point pid to the /series tables (format 3-4)."""
    ser = g["series"]
    kinds = list(zip(*(ser[d].asstr()[...] for d in ("names", "units", "definitions"))))
    if (name, unit, definition) in kinds:
        k = kinds.index((name, unit, definition))
    else:
        k = len(kinds)
        for d, v in (("names", name), ("units", unit), ("definitions", definition)):
            old = list(ser[d].asstr()[...])  # compact since format 4: made anew
            del ser[d]
            ser.create_dataset(d, data=old + [v], dtype=h5py.string_dtype())
    s0, v0, i0 = ser["step"].shape[0], ser["value"].shape[0], ser["index"].shape[0]
    ser["step"].resize((s0 + len(step),))
    ser["step"][s0:] = step
    ser["value"].resize((v0 + len(value),))
    ser["value"][v0:] = value
    row = np.zeros(1, dtype=ser["index"].dtype)
    row["point"], row["kind"], row["ncols"], row["n"] = pid, k, 1, len(step)
    row["step_start"], row["value_start"] = s0, v0
    ser["index"].resize((i0 + 1,))
    ser["index"][i0:i0 + 1] = row

fails = 0


def check(what, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    fails += not cond


def same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def check_store(path, outdir):
    st = Store(path)
    f = h5py.File(path, "r")
    s = f["summary"][...]
    names = list(f["grid/axis_names"].asstr()[...])
    ax = f["grid/axis_values"][...]
    t = st.table()
    check("table has one entry per point (%d)" % len(s), all(len(v) == len(s) for v in t.values()))
    for k in ("id", "replica", "steps", "final_loss", "min_loss", "wall_s", "status"):
        check("table[%s] = /summary" % k, same(t[k], s[k]))
    check("axis names in order", [a.name for a in st.axes] == names)
    for j, n in enumerate(names):
        a = st.axis(n)
        if a.is_text:
            # decoded names must be a bijection of the stored codes
            pairs = set(zip(ax[:, j].tolist(), t[n].tolist()))
            check("enum axis %s decodes to names %s" % (n, sorted({p[1] for p in pairs})),
                  len(pairs) == len({p[0] for p in pairs}) == len({p[1] for p in pairs}) and
                  all(isinstance(p[1], str) for p in pairs))
        else:
            check("numeric axis %s = /grid/axis_values" % n, same(t[n], ax[:, j]))
    if "model.type" in names:
        code = ax[:, names.index("model.type")]
        check("model.type: code 0 = linear, 1 = relu",
              all((c == 0 and v == "linear") or (c == 1 and v == "relu") for c, v in zip(code, t["model.type"])))
    rec = st.records()
    check("records() is a structured array with the same columns", set(rec.dtype.names) == set(t))
    check("status_name", list(t["status_name"]) == [{0: "pending", 1: "done", 2: "diverged", 3: "failed",
                                                      4: "running"}[int(x)] for x in s["status"]])
    # series keyed by parameters
    ser = st.series("loss")
    P = read_points(f)
    written = sorted(P)
    check("series('loss') covers every written point (%d)" % len(written),
          sorted(p["id"] for p, _, _ in ser) == written)
    ok = True
    for p, step, val in ser:
        g = {x[0]: x for x in P[p["id"]]}["loss"]
        ok &= same(step, g[3]) and same(val, g[4])
        i = p["id"]
        ok &= p["replica"] == int(s["replica"][i])
        for j, n in enumerate(names):
            ok &= (p[n] == t[n][i])
    check("series('loss') steps, values and params = h5py", ok)
    sub = st.series("sv/W1", where={"lr": float(s["lr"][0]), "status": "done"})
    want = [int(i) for i in s["id"] if s["lr"][i] == s["lr"][0] and s["status"][i] == 1]
    check("series('sv/W1', where=lr,status) selects %d points" % len(want),
          [p["id"] for p, _, _ in sub] == want and all(v.ndim == 2 for _, _, v in sub))
    check("point_series has every recorded series",
          list(st.point_series(written[0])) == [x[0] for x in P[written[0]]])
    check("attrs: format and sweep name", st.attrs["format"] == "dynsweep-store" and
          st.attrs["sweep_name"] == f.attrs["sweep_name"])
    check("sweep_yaml is the stored text", st.sweep_yaml == f["sweep/yaml"].asstr()[()])
    f.close()
    try:
        Store(os.path.join(outdir, "missing.h5"))
        check("a missing file raises StoreError", False)
    except StoreError as e:
        check("a missing file raises StoreError (%s)" % e, "no such file" in str(e))
    junk = os.path.join(outdir, "junk.h5")
    with open(junk, "w") as fh:
        fh.write("not hdf5")
    try:
        Store(junk)
        check("a non-HDF5 file raises StoreError", False)
    except StoreError:
        check("a non-HDF5 file raises StoreError", True)

    # a copy with synthetic eigenvalue series: lambda(t) rising towards 2/eta
    eig = os.path.join(outdir, "eig.h5")
    shutil.copy(path, eig)
    with h5py.File(eig, "r+") as g:
        s = g["summary"][...]
        for pid in sorted(read_points(g)):
            lr = float(s["lr"][pid])
            step = np.arange(0, 200, 10, dtype=np.int64)
            for name, scale in (("hessian_top", 2.0 / lr), ("ntk_top", 64.0 / lr)):
                add_series3(g, pid, name, step, scale * (1 - 0.5 * np.exp(-step / 50.0)), "1",
                            "synthetic test data")
    st2 = Store(eig)
    check("synthetic store: series_names include hessian_top, ntk_top",
          {"hessian_top", "ntk_top"} <= set(st2.series_names()))


def live(path, pid):
    """Open the store over and over while the sweep runs; every open must work
    once the file exists."""
    reads = errors = 0
    last_done = -1
    t0 = time.time()
    while time.time() - t0 < 300:
        alive = os.path.exists("/proc/%d" % pid)
        if os.path.exists(path):
            try:
                st = Store(path)
                done = int((st.table()["status"] != 0).sum())
                ser = st.series("loss")
                reads += 1
                if done != last_done:
                    print("live read %d: %d points finished, %d with series" % (reads, done, len(ser)))
                    last_done = done
            except StoreError as e:
                errors += 1
                print("live read error: %s" % e)
        if not alive:
            break
        time.sleep(0.05)
    check("read the store %d times while the sweep ran, %d errors" % (reads, errors),
          reads > 0 and errors == 0)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        check_store(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "live":
        live(sys.argv[2], int(sys.argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if fails else 0)
