#!/usr/bin/python3
"""A DenseNet-DAG sweep point (model.net dag, seed 003 Fig. 2.2) against
PyTorch float64, end to end (tests/dag_sweep.sh).

`cnn_sweep_dump SWEEP 0` writes the point's initial weights and data as the
point trainer draws them, read with the store by cnn_sweep.point0 (the DAG's
edge mask from the point's init stream: the dropped weights are the exact
zeros of theta0). PyTorch rebuilds the net
(cnn_layers_torch.py's DAG forward, the mask read off theta0), replays the
point's GD on (1/n) sum (f - y)^2, and computes the NTK K_t = J_t J_t^T by
functorch (vmap of jacrev over the weights) at every step. The store's
series loss, ntk/top (lambda_max(K_t)), ntk/kernel_change and ntk/kernel_change_2
(the F- and 2-norm ratios ||K_t - K_0|| / ||K_0|| of docs/repro/003_dag_kernel.md)
must agree to TOL relative at every recorded step; so must the singular
values of the weight matrices (layers/sv/W<l>: W_1, W_2 with their masked
zeros, the readout) and, to 1e-8 (Lanczos), the top 2 eigenvalues of the
loss Hessian (hessian/top, against torch's full Hessian) every 5 steps, and
its whole spectrum (hessian/spectrum, P HVP columns through the masked DAG,
pdsyevd) to TOL relative to the largest |eigenvalue|: torch's eigenvalues of
the weights' Hessian and one 0 for the inert readout bias (which they cannot unless
the mask and the 1/sqrt(kept in-degree) scales are the point's); the masked
weights stay exactly 0 through torch's GD as well, and about half are kept.

With model.dag_readout_drop > 0 in SWEEP the readout is masked too: its
mask is read off the exact zeros of theta0's readout (as the hidden layers'),
each output unit scaled by 1/sqrt(its kept in-degree) instead of
1/sqrt(d_in + depth m); about 1 - p of its weights must be kept and stay 0
through GD (the checks above then cover the masked readout: the NTK, the
Hessian through it, its singular values with the zeros).

With a sixth argument `quad` the store is a run with model.approx quad
(f_quad(theta) = F(theta0) + J d + 1/2 D2F(theta0)[d, d], d = theta - theta0,
through the DAG's masked layers: cnnquad.c): PyTorch replays GD on
(1/n) sum (f_quad - y)^2, f_quad by functorch jvp and jvp of jvp at theta0;
every recorded loss must agree to TOL relative, and the net's own loss must
not (so the check has teeth).

Usage: dag_sweep.py DUMP_BINARY SWEEP STORE WIDTH DEPTH [quad]  (exit 0 ok, 1 mismatch, 77 skip)
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
    import yaml
    from cnn_sweep import point0
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-10


def main():
    dump, sweep, store, m, depth = sys.argv[1:4] + [int(v) for v in sys.argv[4:6]]

    def nparams(cfg):  # depth W_k (m x (din + k m)), the readout (dout x T), its bias
        din = cfg["c0"] * cfg["h0"] * cfg["w0"]
        return sum(m * (din + k * m) for k in range(depth)) + cfg["dout"] * (din + depth * m + 1)

    pts, cfg, _, _, theta0, X, Y = point0(dump, sweep, store, nparams=nparams)
    dout, n, lr = cfg["dout"], cfg["n"], cfg["lr"]
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    sizes = [m * (din + k * m) for k in range(depth)]
    T = din + depth * m
    P = len(theta0)
    X = X.reshape(n, din)
    Ws, o = [], 0
    for k, s in enumerate(sizes):
        Ws.append(torch.tensor(theta0[o:o + s].reshape(m, din + k * m).copy()))
        o += s
    R = torch.tensor(theta0[o:o + dout * T].reshape(T, dout).T.copy())  # column-major
    b = torch.tensor(theta0[o + dout * T:].copy())
    Ms = [(W != 0).to(torch.float64) for W in Ws]
    kept = sum(float(M.sum()) for M in Ms) / sum(sizes)
    scales = [torch.where(M.sum(1) > 0, M.sum(1).clamp(min=1) ** -0.5, torch.zeros(m)) for M in Ms]
    rdrop = float((yaml.safe_load(open(sweep)).get("model") or {}).get("dag_readout_drop", 0))
    RM = (R != 0).to(torch.float64) if rdrop > 0 else torch.ones_like(R)  # the readout's mask
    rkept = float(RM.mean())
    # the readout's per-unit scale: 1/sqrt(kept in-degree) when masked, else 1/sqrt(T)
    rs = (torch.where(RM.sum(1) > 0, RM.sum(1).clamp(min=1) ** -0.5,
                      torch.zeros(dout, dtype=torch.float64))
          if rdrop > 0 else torch.full((dout,), T ** -0.5, dtype=torch.float64))
    Ms.append(RM)

    def f(params, x):  # one sample x (din,) -> (dout,)
        *W, Rr = params
        cat = x
        for Wk, Mk, sk in zip(W, Ms, scales):
            cat = torch.cat([cat, torch.relu((sk[:, None] * Mk * Wk) @ cat)])
        return (rs[:, None] * RM * Rr) @ cat  # bias_scale 0: the bias is inert

    params = [W.clone() for W in Ws] + [R.clone()]
    if len(sys.argv) > 6 and sys.argv[6] == "quad":
        return quad_replay(pts, f, params, X, Y, n, lr)
    jac = functorch.vmap(functorch.jacrev(f), in_dims=(None, 0))
    ser = {name: (st, v.reshape(len(st), -1)) for name, _, _, st, v in pts[0]}
    steps = int(ser["loss"][0][-1])
    hes_steps = {int(s) for s in ser["hessian/top"][0]}
    K0, err = None, {"loss": 0.0, "ntk/top": 0.0, "ntk/kernel_change": 0.0,
                     "ntk/kernel_change_2": 0.0}
    got, hes, svs, spec = {}, {}, {}, {}
    shapes = [p.shape for p in params]

    def loss_flat(v):
        ps = unflatten(v, shapes)
        F = torch.stack([f(ps, x) for x in X])
        return ((F - Y) ** 2).sum() / n

    for t in range(steps + 1):
        params = [p.detach().requires_grad_(True) for p in params]
        F = torch.stack([f(params, x) for x in X])
        loss = ((F - Y) ** 2).sum() / n
        J = jac([p.detach() for p in params], X)
        Jf = torch.cat([j.reshape(n * dout, -1) for j in J], 1)
        K = Jf @ Jf.T
        K0 = K if K0 is None else K0
        got[t] = {"loss": loss.item(), "ntk/top": torch.linalg.eigvalsh(K)[-1].item(),
                  "ntk/kernel_change": (torch.linalg.norm(K - K0) / torch.linalg.norm(K0)).item(),
                  "ntk/kernel_change_2": (torch.linalg.matrix_norm(K - K0, 2)
                                          / torch.linalg.matrix_norm(K0, 2)).item()}
        if t in hes_steps:  # the loss Hessian's top 2 (Lanczos in dynsweep) and the weights' svs
            v = torch.cat([p.detach().reshape(-1) for p in params])
            H = torch.autograd.functional.hessian(loss_flat, v)
            ev = torch.linalg.eigvalsh(H)
            hes[t] = ev.flip(0)[:2].numpy()
            spec[t] = np.sort(np.append(ev.numpy(), 0.0))  # + the inert bias (bias_scale 0)
            svs[t] = [torch.linalg.svdvals(p.detach())[:2].numpy() for p in params]
        g = torch.autograd.grad(loss, params)
        with torch.no_grad():
            params = [(p - lr * gi).detach() for p, gi in zip(params, g)]
    for name in err:
        st, v = ser[name]
        for s, val in zip(st, v[:, 0]):
            ref = got[int(s)][name]
            scale = max(abs(ref), 1e-300) if not name.startswith("ntk/kernel_change") else max(abs(ref), 1e-12)
            err[name] = max(err[name], abs(val - ref) / scale)
    err["hessian/top"] = err["layers/sv"] = 0.0
    for s, v in zip(*ser["hessian/top"]):
        ref = hes[int(s)]
        err["hessian/top"] = max(err["hessian/top"], float(np.max(np.abs(v - ref)) / abs(ref[0])))
    err["hessian/spectrum"] = 0.0
    st, v = ser["hessian/spectrum"]
    if sorted(int(s) for s in st) != sorted(hes_steps) or v.shape[1] != P:
        print(f"FAIL: hessian/spectrum at steps {list(st)} with {v.shape[1]} values; "
              f"expected the Hessian's steps {sorted(hes_steps)} and P = {P}")
        return 1
    for s, row in zip(st, v):
        ref = spec[int(s)]
        err["hessian/spectrum"] = max(err["hessian/spectrum"],
                                      float(np.max(np.abs(np.sort(row) - ref)) / np.max(np.abs(ref))))
    for l in range(depth + 1):
        st, v = ser[f"layers/sv/W{l + 1}"]
        for s, row in zip(st, v):
            ref = svs[int(s)][l]
            err["layers/sv"] = max(err["layers/sv"], float(np.max(np.abs(row[:len(ref)] - ref)) / ref[0]))
    tol = {"hessian/top": 1e-8}
    zeros = all(bool(((p == 0) | (M != 0)).all()) for p, M in zip(params, Ms))
    print(f"dag point 0: m {m}, depth {depth}, {P} params, {kept:.3f} of the hidden weights kept, "
          f"{rkept:.3f} of the readout's (readout drop {rdrop}); "
          f"loss {got[0]['loss']:.4g} -> {got[steps]['loss']:.4g}, kernel change "
          f"{got[steps]['ntk/kernel_change']:.4g}; max rel err "
          + ", ".join(f"{k} {e:.2e}" for k, e in err.items()) + f"; masked stay 0: {zeros}")
    ok = all(e <= tol.get(k, TOL) for k, e in err.items()) and 0.3 < kept < 0.7 and zeros
    ok &= (0.5 * (1 - rdrop) < rkept < min(1.5 * (1 - rdrop), 0.999)) if rdrop > 0 else rkept == 1
    ok &= got[steps]["ntk/kernel_change"] > 0 and got[steps]["loss"] < got[0]["loss"]
    if not ok:
        print(f"FAIL: tolerance {TOL}, keep rate, masked weights, or nothing moved")
    return 0 if ok else 1


def unflatten(v, shapes):
    """The parameter tensors of the given shapes, in order, from one vector."""
    ps, o = [], 0
    for shp in shapes:
        k = int(np.prod(shp))
        ps.append(v[o:o + k].reshape(shp))
        o += k
    return ps


def quad_replay(pts, f, params, X, Y, n, lr):
    """GD on the DAG's f_quad around theta0 (the weights' vector, the inert
    bias left out), against the store's loss series."""
    shapes = [p.shape for p in params]
    v0 = torch.cat([p.reshape(-1) for p in params])

    def net(v):  # every sample's output, theta flattened
        ps = unflatten(v, shapes)
        return torch.stack([f(ps, x) for x in X])

    def fquad(v):
        d = v - v0
        F0, Jd = functorch.jvp(net, (v0,), (d,))
        _, Qd = functorch.jvp(lambda t: functorch.jvp(net, (t,), (d,))[1], (v0,), (d,))
        return F0 + Jd + 0.5 * Qd

    mse = lambda F: ((F - Y) ** 2).sum() / n  # noqa: E731
    grad = functorch.grad(lambda v: mse(fquad(v)))
    st, vals = {s[0]: (s[3], s[4]) for s in pts[0]}["loss"]
    want = {int(t): float(np.atleast_1d(r)[0]) for t, r in zip(st, vals)}
    v, worst, net_worst = v0.clone(), 0.0, 0.0
    for t in range(max(want) + 1):
        if t in want:
            L = mse(fquad(v)).item()
            worst = max(worst, abs(want[t] - L) / abs(L))
            net_worst = max(net_worst, abs(want[t] - mse(net(v)).item()) / abs(L))
        v = (v - lr * grad(v)).detach()
    ok = worst <= TOL and len(want) > 2 and net_worst > 1e3 * TOL
    print(f"dag f_quad GD: {len(want)} losses (steps 0..{max(want)}), max rel err {worst:.2e} vs "
          f"PyTorch's f_quad replay; the net itself differs by {net_worst:.2e}")
    if not ok:
        print(f"FAIL: tolerance {TOL}, too few losses, or f_quad no different from the net")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
