#!/usr/bin/python3
"""A CNN sweep's store against PyTorch float64 (issue 26, tests/cnn_sweep.sh).

For every point of STORE (a run of SWEEP: model.type cnn, gd, mse half_mean,
train and test split, record every step), `cnn_sweep_dump SWEEP ID` writes the
point's net, initial weights and data as the point trainer draws them;
PyTorch (tests/cnn_torch.py's model code: conv2d / linear, its own autograd)
replays the point's GD and its train and test losses at every recorded step
must equal the store's series "loss" and "test_loss" to TOL relative.

Usage: cnn_sweep.py DUMP_BINARY SWEEP STORE STEPS  (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
try:
    import h5py
    import numpy as np
    import torch
    from cnn_torch import layout, unpack, forward, read_header
    from dynsweep.store import read_points
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-12


def read_dump(path, nparams=None):
    """A cnn_sweep_dump file: (cfg, shapes, pad, [theta0, X, Y, Xt, Yt]), X
    (n, c0, h0, w0) and Y (n, dout) torch tensors. nparams: for a net that
    cnn_torch.layout does not describe (the DAG), a function cfg -> P, and
    shapes = pad = None."""
    cfg, nt, d = read_header(path)
    n, dout = cfg["n"], cfg["dout"]
    if nparams is None:
        shapes, pad = layout(cfg)
        P = sum(int(np.prod(s)) for _, s, _ in shapes)
    else:
        shapes, pad, P = None, None, nparams(cfg)
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    o = 0
    theta0 = d[o:o + P]; o += P
    out = [theta0]
    for m in (n, nt):
        X = d[o:o + din * m].reshape(m, cfg["c0"], cfg["h0"], cfg["w0"]); o += din * m
        Y = d[o:o + dout * m].reshape(m, dout); o += dout * m
        out += [torch.tensor(X.copy()), torch.tensor(Y.copy())]
    assert o == len(d), (o, len(d))
    return cfg, shapes, pad, out


def point0(dump, sweep, store, test=False, nparams=None):
    """The store's points (dynsweep.store.read_points) and point 0's initial
    weights and data as the point trainer draws them (`dump` = cnn_sweep_dump):
    (pts, cfg, shapes, pad, theta0, X, Y), and with test=True also Xt, Yt;
    nparams as read_dump's (the DAG: shapes = pad = None)."""
    with h5py.File(store, "r") as f:
        pts = read_points(f)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p0.bin")
        subprocess.run([dump, sweep, "0", path], check=True)
        cfg, shapes, pad, (theta0, X, Y, Xt, Yt) = read_dump(path, nparams)
    return (pts, cfg, shapes, pad, theta0, X, Y) + ((Xt, Yt) if test else ())


def half_mean(F, Y):
    return ((F - Y) ** 2).sum() / (2 * F.shape[0])


def check_point(dump, sweep, pid, series, steps, tmp):
    path = os.path.join(tmp, f"p{pid}.bin")
    subprocess.run([dump, sweep, str(pid), path], check=True)
    cfg, shapes, pad, (theta0, X, Y, Xt, Yt) = read_dump(path)
    params, _ = unpack(theta0, shapes)
    ref = {"loss": {}, "test_loss": {}}
    for step in range(steps + 1):
        L = half_mean(forward(params, shapes, pad, cfg, X), Y)
        grads = torch.autograd.grad(L, params)
        ref["loss"][step] = L.item()
        with torch.no_grad():
            ref["test_loss"][step] = half_mean(forward(params, shapes, pad, cfg, Xt), Yt).item()
            params = [(p - cfg["lr"] * g).requires_grad_(True) for p, g in zip(params, grads)]
    worst, nval = 0.0, 0
    for name, _, _, st, val in series:
        if name not in ref:
            continue
        for s_, v in zip(st, val):
            r = ref[name][int(s_)]
            worst = max(worst, abs(v - r) / abs(r))
            nval += 1
    names = {s[0] for s in series}
    ok = worst <= TOL and {"loss", "test_loss"} <= names and nval >= 2 * (steps + 1)
    print(f"point {pid}: {cfg['ch']} channels, lr {cfg['lr']}: {nval} values, loss "
          f"{ref['loss'][0]:.6g} -> {ref['loss'][steps]:.6g}, max rel err {worst:.2e}"
          + ("" if ok else f"  FAIL (tolerance {TOL}, want loss and test_loss at every step)"))
    return ok


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    dump, sweep, store, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with h5py.File(store, "r") as f:
        pts = read_points(f)
    if not pts:
        print("FAIL: no points in", store)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([check_point(dump, sweep, pid, pts[pid], steps, tmp) for pid in sorted(pts)])
    print("cnn_sweep:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
