#!/usr/bin/python3
"""A CNN sweep's record.spectra.hessian and hessian_full against PyTorch
float64 (issue 26, tests/cnn_diag.sh; sweep tests/sweeps/cnn_diag.yaml with
hessian and/or hessian_full on).

The GD point (0): `cnn_sweep_dump` writes its initial weights and data;
PyTorch replays GD on (1/(2n)) sum (f - y)^2 and at every step the store
recorded forms the full loss Hessian of the flattened theta
(torch.autograd.functional.hessian, float64) and its eigenvalues
(numpy eigvalsh). hessian/top (Lanczos on dynsweep's R-operator HVPs,
ds_cnn_hvp) must equal the top ones to TOL relative to the largest, and
hessian/spectrum (P HVP columns, ScaLAPACK pdsyevd) every eigenvalue,
ascending. The SGD point (1) records the full-set Hessian from the same
theta_0: its step-0 row equals point 0's.

Usage: cnn_hessian_sweep.py DUMP_BINARY SWEEP STORE  (exit 0 ok, 1 mismatch, 77 skip)
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
    from cnn_torch import forward, params_of
    from cnn_sweep import point0, half_mean
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-8


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    dump, sweep, store = sys.argv[1:]
    pts, cfg, shapes, pad, theta0, X, Y = point0(dump, sweep, store)
    got = {s[0]: (s[3], s[4]) for s in pts[0]}
    names = [s for s in ("hessian/top", "hessian/spectrum") if s in got]
    if not names:
        print("FAIL: no hessian/top or hessian/spectrum series in point 0")
        return 1
    want = {s: {int(t): np.atleast_1d(r) for t, r in zip(*got[s])} for s in names}
    last = max(max(w) for w in want.values())
    loss = lambda th: half_mean(forward(params_of(th, shapes), shapes, pad, cfg, X), Y)
    theta = torch.tensor(theta0.copy())
    worst, nval = 0.0, 0
    for t in range(last + 1):
        if any(t in w for w in want.values()):
            H = torch.autograd.functional.hessian(loss, theta).numpy()
            ev = np.linalg.eigvalsh(0.5 * (H + H.T))
        for s in names:
            if t not in want[s]:
                continue
            row = want[s][t]
            ref = ev[::-1][:len(row)] if s == "hessian/top" else ev
            if len(row) != len(ref):
                print(f"FAIL: {s} at step {t} has {len(row)} values, P = {len(ref)}")
                return 1
            err = float(np.max(np.abs(row - ref)) / np.max(np.abs(ref)))
            show = row if len(row) < 8 else np.r_[row[:3], row[-3:]]
            print(f"step {t}: {s} {np.array2string(show, precision=10)}"
                  f"{'' if len(row) < 8 else ' (3 lowest, 3 highest)'}; max rel err vs torch "
                  f"{err:.2e} (P = {len(theta)})")
            worst, nval = max(worst, err), nval + len(row)
        th = theta.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(loss(th), th)
        theta = (theta - cfg["lr"] * g).detach()
    got1 = {s[0]: (s[3], s[4]) for s in pts.get(1, [])}
    ok1 = True
    for s in names:
        if s in got1:
            r1 = np.atleast_1d(got1[s][1][0])
            e1 = float(np.max(np.abs(r1 - want[s][0])) / np.max(np.abs(want[s][0])))
            ok1 = ok1 and int(got1[s][0][0]) == 0 and e1 <= 1e-12
            print(f"sgd point: step-0 {s} equals the gd point's to {e1:.1e}")
    ok = worst <= TOL and nval > 0 and ok1
    print("cnn_hessian_sweep:", "ok" if ok else "MISMATCH", f"(max rel err {worst:.2e}, tol {TOL})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
