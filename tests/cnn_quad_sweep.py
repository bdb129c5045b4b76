#!/usr/bin/python3
"""A CNN sweep with model.approx quad (f_quad(theta) = F(theta0) + J d + 1/2
D2F(theta0)[d, d], d = theta - theta0; ds_cnn_quad, src/nn/cnnquad.c) against
PyTorch float64 (issue 26, tests/cnn_quad_sweep.sh): `cnn_sweep_dump` writes
point 0's initial weights and data; PyTorch replays GD on (1/(2n)) sum
(f_quad - y)^2, f_quad by functorch jvp and jvp of jvp at theta0, its gradient
by functorch.grad through them; every recorded train and test loss of the
store must agree to TOL relative, and the network itself must not (so the
check has teeth).

Usage: cnn_quad_sweep.py DUMP_BINARY SWEEP STORE  (exit 0 ok, 1 mismatch, 77 skip)
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
    from cnn_sweep import half_mean, point0
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
    pts, cfg, shapes, pad, theta0, X, Y, Xt, Yt = point0(dump, sweep, store, test=True)
    got = {s[0]: (s[3], s[4]) for s in pts[0]}
    want = {name: {int(s): float(np.atleast_1d(r)[0]) for s, r in zip(*got[name])}
            for name in ("loss", "test_loss")}
    th0 = torch.tensor(theta0.copy())

    def fquad(th, Xs):
        f = lambda t: forward(params_of(t, shapes), shapes, pad, cfg, Xs)  # noqa: E731
        d = th - th0
        F0, Jd = functorch.jvp(f, (th0,), (d,))
        _, Qd = functorch.jvp(lambda t: functorch.jvp(f, (t,), (d,))[1], (th0,), (d,))
        return F0 + Jd + 0.5 * Qd

    grad = functorch.grad(lambda th: half_mean(fquad(th, X), Y))
    theta, worst, net_worst = th0.clone(), 0.0, 0.0
    last = max(max(w) for w in want.values())
    for t in range(last + 1):
        for name, (Xs, Ys) in (("loss", (X, Y)), ("test_loss", (Xt, Yt))):
            if t not in want[name]:
                continue
            L = half_mean(fquad(theta, Xs), Ys).item()
            worst = max(worst, abs(want[name][t] - L) / abs(L))
            Lnet = half_mean(forward(params_of(theta, shapes), shapes, pad, cfg, Xs), Ys).item()
            net_worst = max(net_worst, abs(want[name][t] - Lnet) / abs(Lnet))
        theta = (theta - cfg["lr"] * grad(theta)).detach()
    nval = sum(len(w) for w in want.values())
    ok = worst <= TOL and nval > 2 and net_worst > 1e3 * TOL
    print(f"f_quad GD: {nval} train/test losses (steps {sorted(want['loss'])}), max rel err "
          f"{worst:.2e} vs PyTorch's f_quad replay; the network itself differs by {net_worst:.2e}")
    print("cnn_quad_sweep:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
