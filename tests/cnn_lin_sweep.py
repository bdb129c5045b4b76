#!/usr/bin/python3
"""A CNN sweep with model.approx lin (f_lin(theta) = F(theta0) + J(theta0)
(theta - theta0), ds_cnn_lin) against PyTorch float64 (issue 26,
tests/cnn_diag.sh): `cnn_sweep_dump` writes point 0's initial weights and
data; PyTorch replays GD on (1/(2n)) sum (f_lin - y)^2 with functorch (J d by
jvp at theta0, the gradient J^T dF by vjp at theta0) and every recorded loss
of the store must agree to TOL relative.

Usage: cnn_lin_sweep.py DUMP_BINARY SWEEP STORE  (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
try:
    import numpy as np
    import torch
    import functorch
    from cnn_torch import forward, params_of
    from cnn_sweep import point0, half_mean
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-10


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    dump, sweep, store = sys.argv[1:]
    pts, cfg, shapes, pad, theta0, X, Y = point0(dump, sweep, store)
    got = {s[0]: (s[3], s[4]) for s in pts[0]}
    steps, rows = got["loss"]
    want = {int(s): float(np.atleast_1d(r)[0]) for s, r in zip(steps, rows)}
    f = lambda th: forward(params_of(th, shapes), shapes, pad, cfg, X)
    th0 = torch.tensor(theta0.copy())
    F0, vjp_fn = functorch.vjp(f, th0)
    theta, worst, net_worst = th0.clone(), 0.0, 0.0
    n = X.shape[0]
    for t in range(max(want) + 1):
        _, Jd = functorch.jvp(f, (th0,), (theta - th0,))
        F = F0 + Jd
        L = half_mean(F, Y).item()
        if t in want:
            worst = max(worst, abs(want[t] - L) / abs(L))
            Lnet = half_mean(f(theta), Y).item()  # the network itself, for contrast
            net_worst = max(net_worst, abs(want[t] - Lnet) / abs(Lnet))
        (g,) = vjp_fn((F - Y) / n)
        theta = (theta - cfg["lr"] * g).detach()
    ok = worst <= TOL and len(want) > 1 and net_worst > 1e3 * TOL
    print(f"f_lin GD: {len(want)} losses (steps {sorted(want)}), max rel err {worst:.2e} vs "
          f"PyTorch's f_lin replay; the network itself differs by {net_worst:.2e}")
    print("cnn_lin_sweep:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
