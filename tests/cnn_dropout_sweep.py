#!/usr/bin/python3
"""A CNN sweep point with dropout against PyTorch float64 (tests/cnn_diag.sh):
its GD trajectory with dropout on, and the loss Hessian with dropout off.

The point trainer draws a new inverted-dropout mask at every GD step, a pure
function of (the point's ds_cnnpoint_drop_seed, step t, the sample's
training-set index, layer, unit) (ds_dropout_mask; point.c step_loss_grad),
and takes record.spectra.hessian / hessian_full with dropout off.
`cnn_sweep_dump SWEEP 0 FILE STEPS` writes point 0's layer list, initial
weights, data and the masks of steps 0..STEPS through that library function
(so the masks are inputs here, as in cnn_layers_torch.py). PyTorch rebuilds
the net (cnn_layers_torch.py's plan and forward) and replays GD on
(1/(2n)) sum (f - y)^2 with step t's masks; then, every step:
  - the store's loss equals the training loss with dropout off at the
    replay's weights of that step to TOL relative (point.c record(): the
    same quantity as a minibatch point's, not the step's own dropout-on
    loss, which the replay's GD uses);
  - test_loss (dropout off) to TOL;
and at the recorded Hessian steps, the weights of that step:
  - hessian/top (Lanczos on R-operator HVPs) equals the top eigenvalues of
    torch.autograd.functional.hessian of the dropout-off loss to TOP_TOL
    relative to the largest |eigenvalue|;
  - hessian/spectrum (P HVP columns, pdsyevd) every eigenvalue to SPEC_TOL.
The check has teeth, asserted here: GD replayed with dropout off, or with
the masks of step t + 1 at step t (the dropout-off loss at those weights),
misses the store's losses by more than TEETH, and so does the replay's
step's own dropout-on loss; the
Hessian with dropout on (step t's masks) misses the store's spectrum by
more than TEETH; the masks keep 30-70% of the units.

Usage: cnn_dropout_sweep.py DUMP_BINARY SWEEP STORE  (exit 0 ok, 1 mismatch, 77 skip)
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
    from cnn_layers_torch import DROP, read_dump, plan, forward, views
    from dynsweep.store import read_points
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-12       # losses, relative
TOP_TOL = 1e-8    # hessian/top (Lanczos), relative to the largest |eigenvalue|
SPEC_TOL = 1e-12  # hessian/spectrum, relative to the largest |eigenvalue|
TEETH = 1e-4      # what a wrong mask or dropout in the Hessian must at least miss by


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    dump, sweep, store = sys.argv[1:]
    with h5py.File(store, "r") as f:
        pts = read_points(f)
    if 0 not in pts:
        print("FAIL: no point 0 in", store)
        return 1
    got = {s[0]: (s[3], s[4]) for s in pts[0]}
    need = ("loss", "test_loss", "hessian/top", "hessian/spectrum")
    if any(s not in got for s in need):
        print(f"FAIL: point 0 has series {sorted(got)}; want {list(need)}")
        return 1
    want = {s: {int(t): np.atleast_1d(r) for t, r in zip(*got[s])} for s in need}
    steps = max(want["loss"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p0.bin")
        subprocess.run([dump, sweep, "0", path, str(steps)], check=True)
        cfg, layers, d = read_dump(path)
        nt = cfg["ntest"]  # the test samples in the body
    shapes = plan(cfg, layers)
    n, dout = cfg["n"], cfg["dout"]
    P = sum(int(np.prod(s)) for _, s, _ in shapes)
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    units = [int(np.prod(L["out"])) for L in layers if L["kind"] == DROP]
    o = 0  # the body: theta0, X, Y, Xt, Yt, the masks of steps 0..steps

    def take(k):
        nonlocal o
        o += k
        return d[o - k:o]

    shp = (cfg["c0"], cfg["h0"], cfg["w0"])
    theta0 = torch.tensor(take(P).copy())
    X = torch.tensor(take(din * n).reshape(n, *shp).copy())
    Y = torch.tensor(take(dout * n).reshape(n, dout).copy())
    Xt = torch.tensor(take(din * nt).reshape(nt, *shp).copy())
    Yt = torch.tensor(take(dout * nt).reshape(nt, dout).copy())
    masks = [[torch.tensor(take(u * n).reshape(n, u).copy()) for u in units]
             for _ in range(steps + 1)]
    if o != len(d) or not units:
        print(f"FAIL: dump body {len(d)} doubles, read {o}; dropout layers {units}")
        return 1
    kept = float(np.mean([float((m != 0).double().mean()) for ms in masks for m in ms]))

    def loss(th, mk, Xs=X, Ys=Y):  # half_mean; mk None: dropout off
        F = forward(cfg, layers, views(th, shapes), Xs, mk)
        return ((F - Ys) ** 2).sum() / (2 * F.shape[0])

    def replay(mask_of):
        """GD from theta0 with step t's masks mask_of(t): the steps' own
        losses (masks on), and the weights of every step."""
        theta, losses, thetas = theta0.clone(), [], []
        for t in range(steps + 1):
            th = theta.clone().requires_grad_(True)
            L = loss(th, mask_of(t))
            (g,) = torch.autograd.grad(L, th)
            losses.append(L.item())
            thetas.append(theta)
            theta = (theta - cfg["lr"] * g).detach()
        return losses, thetas

    def worst(series, ref):
        return max(abs(float(v[0]) - ref[t]) / abs(ref[t]) for t, v in want[series].items())

    def off(thetas):  # the training loss with dropout off at every step's weights
        return [loss(th, None).item() for th in thetas]

    step_losses, thetas = replay(lambda t: masks[t])
    losses = off(thetas)
    err = {"loss": worst("loss", losses)}
    tl = [loss(th, None, Xt, Yt).item() for th in thetas]
    err["test_loss"] = worst("test_loss", tl)
    # the recorded loss is the net's at those weights, not the step's own (dropout on)
    step_miss = worst("loss", step_losses)
    err["hessian/top"] = err["hessian/spectrum"] = 0.0
    on_miss = np.inf
    for t in sorted(want["hessian/spectrum"]):
        H = torch.autograd.functional.hessian(lambda v: loss(v, None), thetas[t]).numpy()
        ev = np.linalg.eigvalsh(0.5 * (H + H.T))
        Hon = torch.autograd.functional.hessian(lambda v: loss(v, masks[t]), thetas[t]).numpy()
        ev_on = np.linalg.eigvalsh(0.5 * (Hon + Hon.T))
        row, scale = want["hessian/spectrum"][t], np.max(np.abs(ev))
        if len(row) != P:
            print(f"FAIL: hessian/spectrum at step {t} has {len(row)} values, P = {P}")
            return 1
        e = float(np.max(np.abs(np.sort(row) - ev)) / scale)
        err["hessian/spectrum"] = max(err["hessian/spectrum"], e)
        on_miss = min(on_miss, float(np.max(np.abs(np.sort(row) - ev_on)) / scale))
        if t in want["hessian/top"]:
            top = want["hessian/top"][t]
            e_top = float(np.max(np.abs(top - ev[::-1][:len(top)])) / scale)
            err["hessian/top"] = max(err["hessian/top"], e_top)
        print(f"step {t}: loss {losses[t]:.6g}, Hessian (dropout off) top "
              f"{np.array2string(ev[::-1][:4], precision=8)}, lowest {ev[0]:.4g}; "
              f"rel err spectrum {e:.2e}"
              + (f", top {e_top:.2e}" if t in want["hessian/top"] else ""))
    # teeth: a replay with dropout off, and one with the masks a step late
    off_miss = worst("loss", off(replay(lambda t: None)[1]))
    late_miss = worst("loss", off(replay(lambda t: masks[min(t + 1, steps)])[1]))
    tol = {"loss": TOL, "test_loss": TOL, "hessian/top": TOP_TOL, "hessian/spectrum": SPEC_TOL}
    print(f"dropout point 0: {P} params, {len(units)} dropout layer(s) of {units} units, "
          f"{kept:.3f} kept; loss {losses[0]:.6g} -> {losses[steps]:.6g} over {steps} steps; "
          f"max rel err " + ", ".join(f"{k} {e:.2e}" for k, e in err.items()))
    print(f"teeth: the store's losses vs GD with dropout off {off_miss:.2e}, with the masks "
          f"of step t + 1 {late_miss:.2e}, vs the replay's steps' own losses (dropout on) "
          f"{step_miss:.2e}; its spectrum vs the Hessian with dropout on {on_miss:.2e} "
          f"(each must exceed {TEETH})")
    ok = all(e <= tol[k] for k, e in err.items()) and 0.3 < kept < 0.7
    ok &= len(want["hessian/spectrum"]) >= 2 and len(want["loss"]) == steps + 1
    ok &= min(off_miss, late_miss, step_miss, on_miss) > TEETH and losses[steps] < losses[0]
    print("cnn_dropout_sweep:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
