#!/usr/bin/python3
"""repro_003_dag.py -- seed 003 Fig. 2.2 (transition to linearity of a DAG
network): the maximum over training of the relative kernel change
||K_t - K_0|| / ||K_0|| against the width m of the DenseNet-DAG (model.net
dag), in two norms: Frobenius (the store's ntk/kernel_change) and spectral
(ntk/kernel_change_2, the paper's), their log-log slopes with the spread over
replicas (seeds), the slopes below and above a bend (--split M: m <= M and
m >= M), and the figure (both norms).

Usage:
  repro_003_dag.py STORE.h5 [STORE.h5 ...] [--fig OUT.png [--title T --xlabel X]] [--check LO HI] [--json OUT]
Several stores (e.g. the sweep and a run of the same sweep with wider
widths only, as docs/repro/003_dag_kernel.md does for m = 2048, 4096) are
read as one set of points.
  repro_003_dag.py --make-data OUT.csv [N]   (the data of sweeps/repro/003_dag_kernel.yaml)
--check LO HI: exit 1 unless the fitted slope of the spectral-norm ratio
(ntk/kernel_change_2; the Frobenius one when the store has no
kernel_change_2) lies in [LO, HI], every point trained (its loss fell by 10x
at least) and there are >= 3 widths.
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dynsweep_store as ds  # noqa: E402


def collect(path):
    with h5py.File(path, "r") as f:
        summ = f["summary"][...]
        pts = ds.read_points(f, names={"loss", "ntk/kernel_change", "ntk/kernel_change_2"})
    rows = []
    for r in summ:
        pid = int(r["id"])
        got = {n: (st, v) for n, _, _, st, v in pts.get(pid, [])}
        if "ntk/kernel_change" not in got or "loss" not in got:
            continue
        kc = np.asarray(got["ntk/kernel_change"][1], float).reshape(-1)
        k2 = (np.asarray(got["ntk/kernel_change_2"][1], float).reshape(-1)
              if "ntk/kernel_change_2" in got else None)
        loss = np.asarray(got["loss"][1], float).reshape(-1)
        rows.append(dict(width=int(r["width"]), replica=int(r["replica"]),
                         kmax=float(np.nanmax(kc)),
                         kmax2=float(np.nanmax(k2)) if k2 is not None else float("nan"),
                         loss0=float(loss[0]), lossT=float(loss[-1]), status=int(r["status"])))
    return rows


def fit(rows, key="kmax"):
    """Slope of log rows[key] on log m: over all points, and per replica (mean, sd)."""
    w = np.array([r["width"] for r in rows], float)
    k = np.array([r[key] for r in rows], float)
    slope_all, icpt = np.polyfit(np.log(w), np.log(k), 1)
    per = []
    for rep in sorted({r["replica"] for r in rows}):
        sel = [r for r in rows if r["replica"] == rep]
        if len({r["width"] for r in sel}) >= 2:
            per.append(np.polyfit(np.log([r["width"] for r in sel]),
                                  np.log([r[key] for r in sel]), 1)[0])
    per = np.array(per)
    return dict(slope=float(slope_all), intercept=float(icpt),
                slope_mean=float(per.mean()) if len(per) else float("nan"),
                slope_sd=float(per.std(ddof=1)) if len(per) > 1 else float("nan"),
                slopes=[float(s) for s in per])


def figure(rows, fits, out, title, xlabel):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    widths = sorted({r["width"] for r in rows})
    m = np.array(widths, float)
    fig, ax = plt.subplots(figsize=(5.6, 4.3))
    for key, res, c, lab in fits:
        mean = [np.mean([r[key] for r in rows if r["width"] == w]) for w in widths]
        ax.loglog([r["width"] for r in rows], [r[key] for r in rows], "o", color=c, alpha=0.3,
                  ms=3)
        ax.loglog(widths, mean, "o-", color=c, label=lab + " (mean; dots: replicas)")
        ax.loglog(m, np.exp(res["intercept"]) * m ** res["slope"], "--", color=c, lw=1,
                  label="fit: slope %.3f" % res["slope"])
    mean = [np.mean([r[fits[0][0]] for r in rows if r["width"] == w]) for w in widths]
    ax.loglog(m, mean[0] * (m / m[0]) ** -0.5, ":", color="k", label=r"$\propto m^{-1/2}$")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"$\max_t \|K_t - K_0\| / \|K_0\|$")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


FMNIST = "/usr/share/datasets/fashion-mnist/train-"


def make_data(out, n=10):
    """The first n/2 images of Fashion-MNIST classes 7 (sneaker, y = -1) and 9
    (ankle boot, y = +1) in file order, each 28 x 28 image averaged over 7 x 7
    blocks to 4 x 4 = 16 features, then standardised with one mean and std
    over all the features: a 16-dimensional input, small against the DAG's
    widths, so that the in-degrees (and the width m of 003 Def. 2.2.7) are set
    by m and not by d (docs/repro/003_dag_kernel.md)."""
    import gzip
    img = np.frombuffer(gzip.open(FMNIST + "images-idx3-ubyte.gz").read()[16:], np.uint8)
    lab = np.frombuffer(gzip.open(FMNIST + "labels-idx1-ubyte.gz").read()[8:], np.uint8)
    img = img.reshape(-1, 28, 28).astype(float) / 255.0
    idx = np.concatenate([np.flatnonzero(lab == c)[:n // 2] for c in (7, 9)])
    X = img[idx].reshape(-1, 4, 7, 4, 7).mean(axis=(2, 4)).reshape(len(idx), 16)
    X = (X - X.mean()) / X.std()
    y = np.where(lab[idx] == 9, 1.0, -1.0)
    with open(out, "w") as f:
        f.write(",".join(["x%d" % i for i in range(16)] + ["y"]) + "\n")
        for xi, yi in zip(X, y):
            f.write(",".join("%.17g" % v for v in xi) + ",%g\n" % yi)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--make-data":
        make_data(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
        return 0
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", nargs="+")
    ap.add_argument("--fig")
    ap.add_argument("--json")
    ap.add_argument("--check", nargs=2, type=float)
    ap.add_argument("--split", type=int, help="also fit m <= SPLIT and m >= SPLIT apart")
    ap.add_argument("--title", default="003 Fig. 2.2: DenseNet-DAG, edges dropped w.p. 1/2")
    ap.add_argument("--xlabel", default="width m (units per DAG layer)")
    a = ap.parse_args()
    rows = [r for path in a.store for r in collect(path)]
    if not rows:
        print("no point with ntk/kernel_change in", " ".join(a.store))
        return 1
    has2 = all(np.isfinite(r["kmax2"]) for r in rows)
    keys = [("kmax", "F", "C0", r"Frobenius $\|\cdot\|_F$")]
    if has2:
        keys.append(("kmax2", "2", "C3", r"spectral $\|\cdot\|_2$"))
    fits = [(key, fit(rows, key), c, lab) for key, _, c, lab in keys]
    for m in sorted({r["width"] for r in rows}):
        sel = [r for r in rows if r["width"] == m]
        line = "m %5d:" % m
        for key, nm, _, _ in keys:
            ks = np.array([r[key] for r in sel])
            line += " max_t kernel change_%s %.4g +- %.2g;" % (
                nm, ks.mean(), ks.std(ddof=1) if len(ks) > 1 else 0.0)
        print(line + " %d replicas; loss %.3g -> %.3g"
              % (len(sel), np.mean([r["loss0"] for r in sel]), np.mean([r["lossT"] for r in sel])))
    for (key, nm, _, _), (_, res, _, _) in zip(keys, fits):
        print("norm %s: slope of log kernel change on log m: %.3f (all points); per replica "
              "%.3f +- %.3f (sd over %d replicas); theory -0.5"
              % (nm, res["slope"], res["slope_mean"], res["slope_sd"], len(res["slopes"])))
        if a.split:
            lo = [r for r in rows if r["width"] <= a.split]
            hi = [r for r in rows if r["width"] >= a.split]
            for part, sel in (("m <= %d" % a.split, lo), ("m >= %d" % a.split, hi)):
                if len({r["width"] for r in sel}) >= 2:
                    f = fit(sel, key)
                    print("norm %s: %s: slope %.3f (all points); per replica %.3f +- %.3f"
                          % (nm, part, f["slope"], f["slope_mean"], f["slope_sd"]))
    res = fits[-1][1]
    if a.fig:
        figure(rows, [(k, r, c, lab) for k, r, c, lab in fits], a.fig, a.title, a.xlabel)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(res, fits={k: r for k, r, _, _ in fits}, rows=rows), f, indent=1)
    if a.check:
        lo, hi = a.check
        nw = len({r["width"] for r in rows})
        trained = all(r["lossT"] < 0.1 * r["loss0"] for r in rows)
        ok = lo <= res["slope"] <= hi and nw >= 3 and trained
        print("check: slope (norm %s) %.3f in [%g, %g]: %s; %d widths (>= 3); every loss fell "
              "10x: %s" % (keys[-1][1], res["slope"], lo, hi, lo <= res["slope"] <= hi, nw, trained))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
