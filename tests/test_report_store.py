#!/usr/bin/python3
"""Checks tools/dynsweep_store.py against the store read directly with h5py.

    test_report_store.py check STORE OUTDIR   table/records/series vs h5py; writes
                                               OUTDIR/eig.h5: a copy with synthetic
                                               hessian_top / ntk_top series
    test_report_store.py live STORE PID        read STORE repeatedly while process PID
                                               (a running sweep) lives
    test_report_store.py figures HTML JSON MIN [ID...]
                                               a dynsweep-report page: >= MIN figures (and
                                               these), each with data, its CSV (as many rows
                                               as the figure's points) and PNG, plotly divs,
                                               self-contained
    test_report_store.py catapult HTML JSON STORE LS_OUT NTK.csv CRIT.csv SUMMARY.csv
                                               the report of a catapult sweep: outcome counts
                                               = dynsweep ls's, catapult cells in their own
                                               colour, the loss y range below the diverged
                                               runs, lambda0 ... lr_eta_crit = export's
    test_report_store.py lambda0 HTML JSON STORE LS_OUT SUMMARY.csv
                                               a catapult sweep with optimizer.lr_units:
                                               lambda0: the lr_lambda0 axis is the grid's lr,
                                               the NTK ratio to threshold reads lr/2, the
                                               unconverged class counted and coloured
"""
import csv
import json
import re
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
            for name, scale in (("hessian/top", 2.0 / lr), ("ntk_top", 64.0 / lr)):
                add_series3(g, pid, name, step, scale * (1 - 0.5 * np.exp(-step / 50.0)), "1",
                            "synthetic test data")
    st2 = Store(eig)
    check("synthetic store: series_names include hessian/top, ntk_top",
          {"hessian/top", "ntk_top"} <= set(st2.series_names()))
    # lambda0 falls back to hessian/top at step 0 (ntk_top is not ntk/top), eta_crit0 = 2/lambda0
    nm, lr = st2.normalised(), st2.table()["lr"].astype(float)
    want = 2.0 / lr * (1 - 0.5 * np.exp(-0.0 / 50.0))
    check("lambda0 = hessian/top at step 0 when there is no ntk/top (%s)" % nm["lambda0"][:3],
          same(nm["lambda0"], want))
    check("eta_crit0 = 2/lambda0 from hessian/top", same(nm["eta_crit0"], 2.0 / want))
    check("lr_lambda0 = lr * lambda0 (= 1 here), lr_eta_crit = lr / eta_crit0",
          same(nm["lr_lambda0"], lr * want) and same(nm["lr_eta_crit"], lr / (2.0 / want)) and
          np.allclose(nm["lr_lambda0"], 1.0, rtol=1e-12))
    nm0 = st.normalised()
    check("no spectra: lambda0, eta_crit0, lr_lambda0, lr_eta_crit are NaN",
          all(np.isnan(nm0[k]).all() for k in ("lambda0", "eta_crit0", "lr_lambda0", "lr_eta_crit")))
    done = np.isin(st.table()["status"], (1, 2, 3))
    check("... and eta (the absolute learning rate, lr_units absolute) is lr for every written point",
          done.any() and same(nm0["eta"][done], st.table()["lr"].astype(float)[done]) and
          np.isnan(nm0["eta"][~done]).all())


def load_report(html, side):
    page = open(html, encoding="utf-8").read()
    meta = json.load(open(side))
    files = os.path.join(os.path.dirname(html), os.path.dirname(meta["figures"][0]["csv"])) \
        if meta["figures"] else None
    return page, meta, files


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def plot_json(page, fid):
    m = re.search(r"<script type='application/json' id='json-%s'>(.*?)</script>" % re.escape(fid), page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</")) if m else None


def figures(html, side, nmin, need):
    page, meta, files = load_report(html, side)
    figs = {f["id"]: f for f in meta["figures"]}
    print("figures:", {k: f["points"] for k, f in figs.items()}, "skipped:", [s["note"] for s in meta["skipped"]])
    check("%d figures >= %d, with %s" % (len(figs), nmin, need), len(figs) >= nmin and all(n in figs for n in need))
    check("every figure has data points", all(f["points"] > 0 for f in figs.values()))
    tags = dict((k, int(v)) for k, v in re.findall(r"<figure id='fig-([^']+)' data-points='(\d+)'", page))
    check("the page's figures and counts are the sidecar's", tags == {k: f["points"] for k, f in figs.items()})
    bad = []
    for k, f in figs.items():
        head, rows = read_csv(os.path.join(files, k + ".csv"))
        png = os.path.join(files, k + ".png")
        if len(rows) != f["points"] or not head or not os.path.exists(png) or os.path.getsize(png) < 2000:
            bad.append((k, len(rows), f["points"]))
        if not re.search(r"href='%s/%s.csv'" % (re.escape(os.path.basename(files)), re.escape(k)), page):
            bad.append((k, "no link"))
    check("every figure's CSV has as many rows as its points, and a PNG, both linked (%s)" % bad[:3], not bad)
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    check("one embedded PNG per figure (%d)" % len(imgs), len(imgs) == len(figs) and
          all(len(i) > 2000 for i in imgs))
    inter = [k for k, f in figs.items() if f["interactive"]]
    plots = {k: plot_json(page, k) for k in inter}
    want = [k for k in figs if k == "loss" or k.startswith("map-")] if meta["interactive"] else []
    check("interactive figures %s: %s, each a plotly div with traces" % (
        inter, "loss and every map among them" if meta["interactive"] else "none (--static)"),
          all(k in inter for k in want) and (meta["interactive"] or not inter) and
          all(p and p["data"] and ("id='plot-%s'" % k) in page for k, p in plots.items()))
    if inter:
        m = re.search(r"<script id='plotlyjs'>(.*?)</script>", page, re.S)
        check("plotly.js is inlined once (%d KiB)" % (len(m.group(1)) // 1024 if m else 0),
              m is not None and len(m.group(1)) > 1000000 and page.count("<script id='plotlyjs'>") == 1)
        rest = page[:m.start()] + page[m.end():]
    else:
        rest = page
    check("self-contained: no external src/href, <script src> or <link> outside plotly.js",
          not re.search(r"(src|href)=['\"]?(https?:|file:|//)", rest) and
          not re.search(r"<script[^>]*\ssrc=|<link", rest))
    check("sweep file, provenance and summary on the page",
          "Sweep file" in page and "sweep_hash" in page and "Provenance" in page and "<h2>Summary" in page)


def catapult(html, side, store, ls_out, ntk_csv, crit_csv, summary_csv):
    page, meta, files = load_report(html, side)
    figs = {f["id"]: f for f in meta["figures"]}
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import dynsweep
    # outcome counts against the C side's `dynsweep ls` footer
    line = [x for x in open(ls_out).read().splitlines() if x.startswith("outcomes:")][0]
    want = {name: int(n) for n, name in re.findall(r"(\d+) (\w+)", line)}
    check("report's outcome counts %s = dynsweep ls's (%s)" % (meta["outcome_counts"], line),
          meta["outcome_counts"] == want)
    check("the sweep has catapult (%d), converged (%d) and diverged (%d) points" %
          (want["catapult"], want["converged"], want["diverged"]),
          want["catapult"] > 0 and want["converged"] > 0 and want["diverged"] > 0)
    col = meta["outcome_colors"]
    check("seven outcomes (unconverged too), seven distinct colours, catapult's not converged's (%s)" % col,
          len(col) == 7 and "unconverged" in col and len(set(col.values())) == 7 and
          col["catapult"] != col["converged"])
    # the raw map as drawn (plotly): every all-catapult cell in the catapult colour
    head, rows = read_csv(os.path.join(files, "map-outcome.csv"))
    cells = {}
    for r in rows:
        cells.setdefault((r[1], r[2]), []).append(r[4])
    pj = plot_json(page, "map-outcome")
    hm = pj["data"][0]
    scale = hm["colorscale"]
    drawn = {}
    for yi, yv in enumerate(hm["y"]):
        for xi, xv in enumerate(hm["x"]):
            z = hm["z"][yi][xi]
            if z is not None:
                drawn[(xv, yv)] = scale[2 * int(z)][1]
    catc = [k for k, v in cells.items() if set(v) == {"catapult"}]
    conv = [k for k, v in cells.items() if set(v) == {"converged"}]
    check("%d all-catapult cells drawn in %s, %d all-converged cells in %s" % (
        len(catc), col["catapult"], len(conv), col["converged"]),
        catc and conv and all(drawn[k] == col["catapult"] for k in catc) and
        all(drawn[k] == col["converged"] for k in conv))
    import matplotlib.image as mpimg
    for fid in ("map-outcome", "map-outcome-norm"):
        im = (mpimg.imread(os.path.join(files, fid + ".png"))[..., :3] * 255).round()
        npx = {o: int((np.abs(im - np.array([int(col[o][i:i + 2], 16) for i in (1, 3, 5)])).max(axis=2) < 3).sum())
               for o in ("converged", "catapult", "diverged")}
        check("%s.png has converged, catapult and diverged pixels in their colours (%s)" % (fid, npx),
              all(v > 500 for v in npx.values()))
    # normalised columns against dynsweep export --series
    st = dynsweep.open(store)
    c = st.columns()

    def step0(path):
        out = {}
        for r in csv.DictReader(open(path, newline="")):
            if int(r["step"]) == 0:
                out[int(r["point"])] = float(r["value_0"] if "value_0" in r else r["value"])
        return out
    lam, crit = step0(ntk_csv), step0(crit_csv)
    ids = [int(i) for i in c["id"]]
    check("lambda0 = ntk/top column 0 at step 0 as exported, bit for bit (%d points)" % len(lam),
          len(lam) == len(ids) and all(c["lambda0"][k] == lam[i] for k, i in enumerate(ids)))
    check("eta_crit0 = ntk/critical_lr at step 0 as exported",
          all(c["eta_crit0"][k] == crit[i] for k, i in enumerate(ids)))
    lr = c["lr"].astype(float)
    check("lr_lambda0 = lr*lambda0, lr_eta_crit = lr/eta_crit0",
          same(c["lr_lambda0"], lr * c["lambda0"]) and same(c["lr_eta_crit"], lr / c["eta_crit0"]))
    # the C side's columns (dynsweep export, 17 digits) equal the package's bit for bit
    exp = list(csv.DictReader(open(summary_csv, newline="")))
    cols = ("lambda0", "eta_crit0", "lr_lambda0", "lr_eta_crit", "eta")
    diff = [(r["id"], k, r.get(k), c[k][ids.index(int(r["id"]))]) for r in exp for k in cols
            if not same(float(r[k]) if r.get(k) not in (None, "") else np.nan, c[k][ids.index(int(r["id"]))])]
    check("summary()'s %s = dynsweep export's, bit for bit (%d points%s)" % (
        ", ".join(cols), len(exp), "; " + repr(diff[:3]) if diff else ""),
        len(exp) == len(ids) and all(k in exp[0] for k in cols) and not diff)
    oc = np.array([frames_name(k) for k in c["outcome"]])
    band = c["lr_eta_crit"][oc == "catapult"]
    check("every catapult point lies in the theory band 1 < lr/eta_crit0 < 2 (%.3g .. %.3g)"
          % (band.min(), band.max()), len(band) and band.min() > 1.0 and band.max() < 2.0)
    nm = figs.get("map-outcome-norm", {})
    check("the normalised map is over lr_lambda0 with the theory lines 2 and 4 (%s)" % nm.get("theory_lines"),
          nm.get("x") == "lr_lambda0" and np.allclose(nm.get("theory_lines", []), [2.0, 4.0], rtol=1e-9))
    # loss y range: from the runs that did not diverge, below every diverged run's peak
    loss = st.raw.series("loss")
    peaks_div, top_ok = [], 0.0
    for p, step, v in loss:
        i = ids.index(p["id"])
        v = v[np.isfinite(v)]
        if oc[i] == "diverged":
            peaks_div.append(v.max())
        else:
            top_ok = max(top_ok, v.max())
    lo, hi = figs["loss"]["ylim"]
    check("loss y range [%.3g, %.3g]: covers the non-diverged runs (max %.3g), below every diverged "
          "run's peak (min %.3g)" % (lo, hi, top_ok, min(peaks_div)), top_ok <= hi < min(peaks_div))
    pj = plot_json(page, "loss")
    ranges = [v["range"] for k, v in pj["layout"].items() if k.startswith("yaxis") and "range" in v]
    check("the interactive loss panels' y range is that range (%s)" % ranges[:1],
          ranges and all(abs(r[1] - np.log10(hi)) < 1e-9 and abs(r[0] - np.log10(lo)) < 1e-9 for r in ranges))
    head, rows = read_csv(os.path.join(files, "loss.csv"))
    clipped = [r for r in rows if r[-1] == "1"]
    check("%d diverged runs clipped and marked (%d in the CSV)" % (figs["loss"]["clipped"], len(clipped)),
          figs["loss"]["clipped"] == len(clipped) == len(peaks_div) and
          all(float(r[5]) > hi or not np.isfinite(float(r[5])) for r in clipped))
    check("no drawn loss value above the y range", all(float(r[5]) <= hi for r in rows if r[-1] == "0"))


def lambda0_units(html, side, store, ls_out, summary_csv):
    """A catapult sweep with optimizer.lr_units: lambda0 (the grid's lr is eta*lambda0):
    the report's normalised axis is the grid's lr, its theory lines 2 and 4, the NTK
    'ratio to threshold' at step 0 is lr/2 (half_sum: threshold 2/eta, eta the absolute
    rate), not lambda0 times that; unconverged points are counted and coloured."""
    page, meta, files = load_report(html, side)
    figs = {f["id"]: f for f in meta["figures"]}
    line = [x for x in open(ls_out).read().splitlines() if x.startswith("outcomes:")][0]
    want = {name: int(n) for n, name in re.findall(r"(\d+) (\w+)", line)}
    check("lr_units lambda0: outcome counts %s = dynsweep ls's, with unconverged (%d), catapult (%d), "
          "diverged (%d)" % (meta["outcome_counts"], want.get("unconverged", 0), want.get("catapult", 0),
                             want.get("diverged", 0)),
          meta["outcome_counts"] == want and min(want["unconverged"], want["catapult"], want["diverged"]) > 0)
    exp = {int(r["id"]): r for r in csv.DictReader(open(summary_csv, newline=""))}
    nm = figs.get("map-outcome-norm", {})
    check("the normalised map is over lr_lambda0 with the theory lines 2 and 4 (%s)" % nm.get("theory_lines"),
          nm.get("x") == "lr_lambda0" and np.allclose(nm.get("theory_lines", []), [2.0, 4.0], rtol=1e-9))
    head, rows = read_csv(os.path.join(files, "map-outcome-norm.csv"))
    ix, il, ie = head.index("lr_lambda0"), head.index("lr"), head.index("eta")
    bad = [r for r in rows if not (abs(float(r[ix]) - float(r[il])) <= 1e-12 * float(r[il]) and
                                   float(r[ie]) == float(exp[int(r[0])]["eta"]))]
    check("... each point at its grid lr (= eta*lambda0), eta = dynsweep export's (%d points%s)"
          % (len(rows), "; " + repr(bad[:2]) if bad else ""), len(rows) == len(exp) and not bad)
    import matplotlib.image as mpimg
    col = meta["outcome_colors"]
    for fid in ("map-outcome", "map-outcome-norm"):
        im = (mpimg.imread(os.path.join(files, fid + ".png"))[..., :3] * 255).round()
        npx = {o: int((np.abs(im - np.array([int(col[o][i:i + 2], 16) for i in (1, 3, 5)])).max(axis=2) < 3).sum())
               for o in ("converged", "unconverged", "catapult", "diverged")}
        check("%s.png has converged, unconverged, catapult and diverged pixels in their colours (%s)" % (fid, npx),
              all(v > 300 for v in npx.values()))
    pj = plot_json(page, "map-outcome")
    xt = pj["layout"]["xaxis"]["title"]
    xt = xt.get("text", "") if isinstance(xt, dict) else str(xt)
    check("the raw map's lr axis says what it holds (%r)" % xt, "η·λ0" in xt and "lr_units: lambda0" in xt)
    head, rows = read_csv(os.path.join(files, "ntk.csv"))
    r0 = [r for r in rows if r[head.index("step")] == "0"]
    ratio = {int(r[0]): float(r[head.index("ntk/top")]) / float(r[head.index("threshold")]) for r in r0}
    lr = {i: float(exp[i]["lr"]) for i in ratio}
    bad = [(i, ratio[i], lr[i]) for i in ratio if abs(ratio[i] - lr[i] / 2) > 1e-9 * lr[i]]
    check("NTK panel: the ratio to threshold at step 0 is lr/2 for each of %d points (%.3g .. %.3g; the edge "
          "of stability at lr 2 reads 1)%s" % (len(ratio), min(ratio.values()), max(ratio.values()),
                                               "; " + repr(bad[:2]) if bad else ""),
          len(ratio) == len(exp) and not bad and max(ratio.values()) < 10)


def split(html, side, summary_csv):  # noqa: C901
    """A sweep of model.type: [relu, tanh] x width x lr (issue 24, item 4): the maps over
    lr x width are small multiples, one panel per model.type (no cell mixes relu and
    tanh: no "C 1/2"), each cell = that type's point in `dynsweep export`; the min-loss
    values are each point's own; ReLU and tanh loss curves never share a panel."""
    page, meta, files = load_report(html, side)
    figs = {f["id"]: f for f in meta["figures"]}
    _, exp = read_csv(summary_csv)
    head = open(summary_csv).readline().strip().split(",")
    ex = [dict(zip(head, r)) for r in exp]
    key = {(r["model.type"], float(r["width"]), float(r["lr"])): r for r in ex}
    types = sorted({r["model.type"] for r in ex})
    want = ["model.type=%s" % t for t in types]
    for fid in ("map-outcome", "map-min_loss", "map-steps_to_99"):
        f = figs.get(fid, {})
        check("%s: one panel per model.type %s (got %s), split %s" % (fid, want, f.get("panels"), f.get("split")),
              f.get("panels") == want and f.get("split") == ["model.type"] and not f.get("aggregated"))
    h, rows = read_csv(os.path.join(files, "map-outcome.csv"))
    got = {(r[h.index("model.type")], float(r[h.index("width")]), float(r[h.index("lr")])): r[h.index("outcome")]
           for r in rows} if "model.type" in h else {}
    check("map-outcome.csv: every point with its model.type, outcome = export's (%d of %d)"
          % (sum(got.get(k) == v["outcome"] for k, v in key.items()), len(key)),
          len(rows) == len(key) and all(got.get(k) == v["outcome"] for k, v in key.items()))
    pj = plot_json(page, "map-outcome")
    texts = [a.get("text", "") for a in (pj or {}).get("layout", {}).get("annotations", [])]
    mixed = [t for t in texts if "/" in t]
    check("no mixed cell in the outcome map (cell labels with counts: %s)" % mixed[:3], pj and not mixed and
          sum(1 for t in texts if t in want) == len(want))
    diff = [k[1:] for k in key if k[0] == types[0] and (types[1],) + k[1:] in key and
            key[k]["outcome"] != key[(types[1],) + k[1:]]["outcome"]]
    check("the sweep has cells where the types differ (%s)" % diff, len(diff) > 0)
    h, rows = read_csv(os.path.join(files, "map-min_loss.csv"))
    ok = "model.type" in h and all(
        abs(float(r[h.index("min_loss")]) / float(key[(r[h.index("model.type")], float(r[h.index("width")]),
                                                        float(r[h.index("lr")]))]["min_loss"]) - 1) < 1e-6
        for r in rows)
    check("map-min_loss.csv: every value is its own point's min_loss (%d rows)" % len(rows), ok and len(rows) > 0)
    ty = {r["id"]: r["model.type"] for r in ex}
    for fid in ("map-outcome-norm", "map-peak_ratio"):
        f = figs.get(fid, {})
        h, rows = read_csv(os.path.join(files, fid + ".csv")) if f else ([], [])
        byrow = {}
        for r in rows:
            byrow.setdefault(r[2], set()).add(ty[r[0]])
        check("%s over lr*lambda0: one row per width x model.type (%s)" % (fid, {k: sorted(v) for k, v in byrow.items()}),
              f.get("split") == ["model.type"] and len(byrow) == 4 and
              all(len(v) == 1 and ("model.type=" + next(iter(v))) in k for k, v in byrow.items()))
    h, rows = read_csv(os.path.join(files, "loss.csv"))
    pan = {}
    for r in rows:
        pan.setdefault(r[1], set()).add(ty[r[0]])
    check("loss curves: no panel holds both types (%s)" % {k: sorted(v) for k, v in pan.items()},
          len(pan) >= 2 and all(len(v) == 1 for v in pan.values()))


def mapstore(html, side, npzdir, dim_out, refined):
    """The report of a map store (issue 24, item 4): the measure, outcome, computed and
    boundary figures, each pixel of their CSVs = the arrays `dynsweep map` writes
    (npzdir/measure.npz, outcome.npz, computed.npz) and the dimension = `dynsweep map
    --fractal-dimension`'s (dim_out); a refined map (refined = 1) has inferred pixels."""
    page, meta, files = load_report(html, side)
    figs = {f["id"]: f for f in meta["figures"]}
    want = ["map-measure", "map-outcome", "map-computed", "map-boundary"]
    check("map store: figures %s (got %s)" % (want, list(figs)), list(figs) == want)
    if list(figs) != want:
        return
    for metric in ("measure", "outcome", "computed"):
        z = np.load(os.path.join(npzdir, metric + ".npz"))
        h, rows = read_csv(os.path.join(files, "map-%s.csv" % metric))
        xs, ys = list(z["x"]), list(z["y"])
        grid = np.full(z["values"].shape, np.nan)
        for r in rows:
            grid[ys.index(float(r[2])), xs.index(float(r[1]))] = float(r[3])
        n = int(np.isfinite(z["values"]).sum())
        check("map-%s.csv: %d pixels, each = dynsweep map --metric %s's (%d finite)"
              % (metric, len(rows), metric, n), len(rows) == n and n > 0 and same(grid, z["values"]))
    c = np.load(os.path.join(npzdir, "computed.npz"))["values"]
    inf = int((c == 0.5).sum())
    check("computed vs inferred: %d trained, %d inferred (meta %s)" % (int((c == 1).sum()), inf, meta["map"]),
          meta["map"]["inferred"] == inf and meta["map"]["computed"] == int((c == 1).sum()) and
          (inf > 0) == (refined == "1"))
    d = float(re.search(r"boundary: ([0-9.]+)", open(dim_out).read()).group(1))
    got = figs["map-boundary"].get("dimension", [None])[0]
    check("boundary dimension %s = dynsweep map --fractal-dimension's %.3f" % (got, d),
          got is not None and abs(got - d) < 5e-4)
    m = re.search(r"<p>Store <code>[^<]*</code>: ([^<]*)</p>", page)
    check("the page says what the store is (%r), not '0 points'" % (m.group(1) if m else None),
          m is not None and m.group(1).startswith("a map store") and "Map store: " in page)


def frames_name(k):
    from dynsweep import frames
    return frames.OUTCOME_CATEGORIES[k]


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
    elif len(sys.argv) >= 5 and sys.argv[1] == "figures":
        figures(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    elif len(sys.argv) == 9 and sys.argv[1] == "catapult":
        catapult(*sys.argv[2:9])
    elif len(sys.argv) == 7 and sys.argv[1] == "mapstore":
        mapstore(*sys.argv[2:7])
    elif len(sys.argv) == 5 and sys.argv[1] == "split":
        split(*sys.argv[2:5])
    elif len(sys.argv) == 7 and sys.argv[1] == "lambda0":
        lambda0_units(*sys.argv[2:7])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if fails else 0)
