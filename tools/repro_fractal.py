#!/usr/bin/python3
"""repro_fractal.py -- the trainability-fractal reproduction (issue 13;
docs/repro/fractal.md): a dense map of the study's lr_in x lr_out map, then an
adaptive zoom sequence, each window a tenth of the last (in log10 units along
both axes) and centred where the one before has the most boundary, with the
box-counting dimension of the boundary in every window.

  tools/repro_fractal.py DIR [--sweep sweeps/repro/fractal_tanh.yaml]
      [--dense 1024] [--coarse 65] [--levels 6] [--windows 3] [--steps 1000]
      [--ranks 2] [--dynsweep build/dynsweep] [--set KEY=VALUE ...]
      [--centre densest|nearest] [--check-refine COARSE]
      [--submit 'SUBMIT OPTIONS' [--poll SECONDS]]

Writes DIR/dense.h5, DIR/zoom1.h5 ..., a PNG of each (dynsweep map) and
DIR/fractal.txt, one line per map: window, pixels, trained share, dimension
and fit. --check-refine COARSE also refines the dense map's own grid from
COARSE x COARSE (DIR/dense_refinedCOARSE.h5; (dense - 1) / (COARSE - 1) must be a
power of two) and reports how many pixels it gets wrong against the dense
map (docs/maps.md, "What it can miss"). Every store is resumable: run the same command again after a kill.
The boundary: 2x2 pixel blocks whose outcomes are not all converged-or-
catapult or all diverged (the sign of the study's measure), on the full
reconstructed map (refined maps: trained and inferred pixels).

--submit runs every map as a Slurm job chain instead of under mpirun:
`dynsweep submit SWEEP -o DIR/MAP.h5 -J ds-fractal-MAP SUBMIT OPTIONS` (for
example --submit '-N 64 -t 4:00:00 -p compute'), then waits until the store is
complete (`dynsweep status --state`, every --poll seconds) before it chooses
the next window from it. A map whose store is complete is not submitted
again, and a chain already in the queue is waited for, not doubled: after the
driver is stopped, run the same command again. A chain that ends with its
store incomplete is an error naming the store and the job logs."""
import argparse
import glob
import math
import os
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import dynsweep  # noqa: E402
from dynsweep import maps  # noqa: E402

AX_IN, AX_OUT = "optimizer.lr_in", "optimizer.lr_out"


def state(a, store):
    """dynsweep status --state of store, or 'none' before it exists"""
    if not os.path.exists(store):
        return "none"
    r = subprocess.run([a.dynsweep, "status", store, "--state"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unreadable"


def queued(name):
    """ids of the jobs named name in the queue; exits when squeue fails"""
    r = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("repro_fractal.py: squeue failed: %s" % r.stderr.strip())
    return r.stdout.split()


def submit(a, store, extra):
    """the map as a Slurm job chain (dynsweep submit); returns when store is complete"""
    name = "ds-fractal-" + os.path.basename(store)[:-3]
    if state(a, store) == "complete":
        return
    if not queued(name):
        cmd = [a.dynsweep, "submit", a.sweep, "-o", store, "-J", name, "--set",
               "train.steps=%d" % a.steps]
        for kv in a.set or []:
            cmd += ["--set", kv]
        subprocess.run(cmd + extra + shlex.split(a.submit), check=True)
    while True:
        st = state(a, store)
        if st == "complete":
            return
        if st == "stopped":
            raise SystemExit("repro_fractal.py: %s: the run stopped on a store error (dynsweep status %s)"
                             % (store, store))
        if not queued(name):
            for _ in range(60):  # the last job's ranks may still be closing the store
                st = state(a, store)
                if st != "running":
                    break
                time.sleep(1)
            if st == "complete":
                return
            logs = sorted(glob.glob(store + ".slurm-*.out"))
            raise SystemExit("repro_fractal.py: %s: the job chain %s ended with the store %s; job logs: %s"
                             % (store, name, st, " ".join(logs) or "none"))
        time.sleep(a.poll)


def run(a, store, extra):
    if a.submit is not None:
        return submit(a, store, extra)
    cmd = ["mpirun", "--oversubscribe", "-n", str(a.ranks), a.dynsweep, "run", a.sweep, "-o",
           store, "--quiet", "--set", "train.steps=%d" % a.steps]
    for s in a.set or []:
        cmd += ["--set", s]
    cmd += extra
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(cmd, check=True, env=env)


def axis_set(name, lo, hi, num):
    return ["--set", "grid.%s={start: %.17g, stop: %.17g, num: %d, spacing: log}"
            % (name, 10 ** lo, 10 ** hi, num)]


def analyse(store):
    """(outcome map with rows = lr_in, sign map, trained share, Fit or None, coords)"""
    m = dynsweep.open(store).map()
    o = m["outcome"]
    if m["axes"].index(AX_IN) > m["axes"].index(AX_OUT):
        o = o.T
    sign = np.where(o < 0, np.nan, np.where(o == 1, 1.0, -1.0))  # diverged +, else -
    b = maps.boundary(sign)
    fit = maps.box_counting(b) if b.any() else None
    return o, sign, float(m["computed"].mean()), fit, m["coords"]


def centre(sign, lo_in, hi_in, lo_out, hi_out, rule="densest"):
    """log10 (lr_in, lr_out) of the next window's centre. nearest: the boundary
    block nearest this window's centre. densest (default): the centre of the
    next window's extent (a tenth of this one) that holds the most boundary
    blocks, the nearest to this window's centre among equals; so a zoom follows
    the boundary itself rather than an isolated island near the centre (which
    nearest picked on the ReLU map: windows of scattered specks)."""
    b = maps.boundary(sign)
    idx = np.argwhere(b)
    if not len(idx):
        raise SystemExit("repro_fractal: no boundary in the window; widen it")
    n_in, n_out = sign.shape
    c = np.array([(n_in - 1) / 2.0, (n_out - 1) / 2.0])
    if rule == "nearest":
        i, j = idx[np.argmin(((idx + 0.5 - c) ** 2).sum(axis=1))]
        fi, fj = i + 0.5, j + 0.5
    else:
        wi, wj = max(1, b.shape[0] // 10), max(1, b.shape[1] // 10)
        cs = np.zeros((b.shape[0] + 1, b.shape[1] + 1))
        cs[1:, 1:] = np.cumsum(np.cumsum(b, axis=0), axis=1)
        cnt = cs[wi:, wj:] - cs[:-wi, wj:] - cs[wi:, :-wj] + cs[:-wi, :-wj]  # box sums, top-left (i, j)
        ii, jj = np.nonzero(cnt == cnt.max())
        fi, fj = ii + wi / 2.0, jj + wj / 2.0  # box centres, in block coordinates
        k = np.argmin((fi - c[0]) ** 2 + (fj - c[1]) ** 2)
        fi, fj = fi[k], fj[k]
    return (lo_in + fi * (hi_in - lo_in) / (n_in - 1),
            lo_out + fj * (hi_out - lo_out) / (n_out - 1))


def check_refine(a, dense, lo_in, hi_in, lo_out, hi_out, record, lines):
    """The dense map's grid again, refined from a.check_refine^2 pixels: the
    share of pixels trained and of pixels whose outcome class differs."""
    ratio = (a.dense - 1) // (a.check_refine - 1)
    levels = int(round(math.log2(ratio))) if ratio >= 1 else 0
    if a.check_refine < 2 or (a.check_refine - 1) * 2 ** levels + 1 != a.dense:
        raise SystemExit("repro_fractal: --check-refine %d: (dense - 1) / (COARSE - 1) must be "
                         "a power of two (dense %d)" % (a.check_refine, a.dense))
    store = os.path.join(a.dir, "dense_refined%d.h5" % a.check_refine)
    run(a, store, axis_set(AX_IN, lo_in, hi_in, a.check_refine)
        + axis_set(AX_OUT, lo_out, hi_out, a.check_refine)
        + ["--set", "grid.refine={levels: %d}" % levels])
    record("refined", store, a.dense)
    d, r = dynsweep.open(dense).map(), dynsweep.open(store).map()
    for k in d["coords"]:
        if not np.array_equal(d["coords"][k], r["coords"][k]):
            raise SystemExit("repro_fractal: %s: the refined grid's values differ from the dense "
                             "map's" % k)
    wrong = (d["outcome"] == 1) != (r["outcome"] == 1)  # diverged or not, as the boundary
    cls = d["outcome"] != r["outcome"]
    lines.append("refined %dx%d from %dx%d (%d levels): %.2f%% trained, diverged-or-not agrees "
                 "on %.3f%% (%d pixels differ), outcome class on %.3f%% (%d differ)" % (
                     a.dense, a.dense, a.check_refine, a.check_refine, levels,
                     100 * float(r["computed"].mean()), 100 * (1 - wrong.mean()),
                     int(wrong.sum()), 100 * (1 - cls.mean()), int(cls.sum())))
    print(lines[-1], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--sweep", default=os.path.join(HERE, "..", "sweeps", "repro", "fractal_tanh.yaml"))
    ap.add_argument("--dense", type=int, default=1024)
    ap.add_argument("--coarse", type=int, default=65)
    ap.add_argument("--levels", type=int, default=6)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--range", default="0,7,0,4",
                    help="log10 lr_in lo,hi, lr_out lo,hi of the dense map (default 0,7,0,4)")
    ap.add_argument("--dynsweep", default=os.path.join(HERE, "..", "build", "dynsweep"))
    ap.add_argument("--set", action="append", help="KEY=VALUE passed to dynsweep run")
    ap.add_argument("--centre", choices=("densest", "nearest"), default="densest",
                    help="how the next window is centred (see centre())")
    ap.add_argument("--submit", metavar="OPTIONS",
                    help="run each map as a Slurm job chain: dynsweep submit with OPTIONS "
                         "(e.g. '-N 16 -t 4:00:00'), waiting for it before the next window")
    ap.add_argument("--poll", type=float, default=30, help="seconds between checks with --submit")
    ap.add_argument("--check-refine", type=int, metavar="COARSE",
                    help="refine the dense map's grid from COARSE x COARSE and compare")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    lo_in, hi_in, lo_out, hi_out = [float(v) for v in a.range.split(",")]
    lines = ["%-6s %-22s %-22s %9s %8s %9s %s" % ("map", "log10 lr_in", "log10 lr_out", "pixels",
                                                  "trained", "dimension", "fit (boxes, R^2)")]

    def record(name, store, n):
        o, sign, share, fit, _ = analyse(store)
        dim = "%.3f" % fit.dimension if fit else "-"
        fr = ("%d..%d px, %.3f" % (fit.fit_sizes[0], fit.fit_sizes[-1], fit.r2)) if fit else "no boundary"
        lines.append("%-6s %-22s %-22s %9d %7.2f%% %9s %s" % (
            name, "%.4g..%.4g" % (lo_in, hi_in), "%.4g..%.4g" % (lo_out, hi_out), n * n,
            100 * share, dim, fr))
        subprocess.run([a.dynsweep, "map", store, "-o", os.path.join(a.dir, name + ".png"),
                        "--axes", "%s,%s" % (AX_OUT, AX_IN), "--metric", "outcome"], check=True,
                       stdout=subprocess.DEVNULL)
        print(lines[-1], flush=True)
        return sign

    print(lines[0], flush=True)
    store = os.path.join(a.dir, "dense.h5")
    run(a, store, axis_set(AX_IN, lo_in, hi_in, a.dense) + axis_set(AX_OUT, lo_out, hi_out, a.dense))
    sign = record("dense", store, a.dense)
    if a.check_refine:
        check_refine(a, store, lo_in, hi_in, lo_out, hi_out, record, lines)
    n = (a.coarse - 1) * 2 ** a.levels + 1
    for w in range(1, a.windows + 1):
        cin, cout = centre(sign, lo_in, hi_in, lo_out, hi_out, a.centre)
        win_in, win_out = (hi_in - lo_in) / 10, (hi_out - lo_out) / 10
        lo_in, hi_in = cin - win_in / 2, cin + win_in / 2
        lo_out, hi_out = cout - win_out / 2, cout + win_out / 2
        store = os.path.join(a.dir, "zoom%d.h5" % w)
        run(a, store, axis_set(AX_IN, lo_in, hi_in, a.coarse) + axis_set(AX_OUT, lo_out, hi_out, a.coarse)
            + ["--set", "grid.refine={levels: %d}" % a.levels])
        sign = record("zoom%d" % w, store, n)
    with open(os.path.join(a.dir, "fractal.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
