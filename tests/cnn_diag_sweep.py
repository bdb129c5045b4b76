#!/usr/bin/python3
"""A CNN sweep's diagnostics in the store against PyTorch float64 (issue 26,
tests/cnn_diag.sh, sweep tests/sweeps/cnn_diag.yaml).

The full-batch GD point (optimizer.batch_size 0): `cnn_sweep_dump` writes its
initial weights and data as the point trainer draws them; PyTorch replays GD
(loss (1/(2n)) sum (f - y)^2) and at every recorded step recomputes
  - the NTK K_t = J J^T (functorch jacrev over the parameters): ntk/top,
    ntk/critical_lr = 2n/lambda_max, ntk/kernel_change ||K_t - K_0||_F/||K_0||_F,
    ntk/kernel_change_2 ||K_t - K_0||_2/||K_0||_2,
    ntk/loss_top and ntk/loss_rest (the residual projected on the top-s
    eigenvectors), ntk/batch_critical_lr (full batch: the same K);
  - torch.linalg.svdvals of each conv kernel (C_out x C_in s^2) and the
    readout: layers/sv/W<l>, sv/W<l>, layers/fro, layer_fro, layers/spectral;
  - the AGOP over the pixels (vmap(jacrev) in the inputs) and its cosine with
    G* = diag(1, 1, 0, ...) of the rank-2 task: agop/alignment.
    escape/speed: -Tr[G^T f(theta~)], G = dL/dF at F = 0 by autograd,
    theta~ = sqrt(L) theta / ||theta||, L = 3 weight matrices.
  - each ReLU's output (Z the conv's output, relu(Z)) as n x C H W:
    torch.linalg.svdvals (activations/sv/A<l>, NaN-padded) and
    ||relu(Z) - Z||_F^2 / ||Z||_F^2 (activations/nonlinearity).
The SGD point (batch 6) starts from the same weights: its step-0 NTK series
equal the GD point's, and lambda_max of its step-0 minibatch NTK (a principal
submatrix of K_0) lies in [min_i K_0[i,i], lambda_max(K_0)].
Tolerance 1e-10 relative (to the largest entry of a row).

Usage: cnn_diag_sweep.py DUMP_BINARY SWEEP STORE  (exit 0 ok, 1 mismatch, 77 skip)
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
    import torch.nn.functional as Fn
    from cnn_torch import layout, unpack, forward
    from cnn_sweep import point0, half_mean
    from cnn_diag_torch import ntk, agop
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy python3-h5py)")
    sys.exit(77)

TOL = 1e-10


def reference(cfg, shapes, pad, theta0, X, Y, lr, steps, split, topk):
    """{series name: {step: row}} of the GD replay."""
    params, _ = unpack(theta0, shapes)
    n = X.shape[0]
    ref = {}
    put = lambda name, t, v: ref.setdefault(name, {}).__setitem__(t, np.atleast_1d(np.asarray(v, float)))
    K0 = None
    for t in range(steps + 1):
        K = ntk(params, shapes, pad, cfg, X).detach().numpy()
        K0 = K if K0 is None else K0
        w, V = np.linalg.eigh(K)
        w, V = w[::-1], V[:, ::-1]
        F = forward(params, shapes, pad, cfg, X).detach().numpy()  # n x k
        r = (F - Y.numpy()).reshape(-1)  # sample-major, output fastest: o + k i
        c = 1.0 / (2 * n)
        put("ntk/top", t, w[:topk])
        put("ntk/critical_lr", t, 1.0 / (c * w[0]))
        put("ntk/batch_critical_lr", t, 1.0 / (c * w[0]))
        put("ntk/kernel_change", t, np.linalg.norm(K - K0) / np.linalg.norm(K0))
        put("ntk/kernel_change_2", t, np.linalg.norm(K - K0, 2) / np.linalg.norm(K0, 2))
        le = [c * np.sum((V[:, :s].T @ r) ** 2) for s in split]
        put("ntk/loss_top", t, le)
        put("ntk/loss_rest", t, [c * np.sum(r ** 2) - v for v in le])
        mats = [p.detach().reshape(p.shape[0], -1) for (kind, _, _), p in zip(shapes, params)
                if kind in ("convW", "readW")]
        svs = [torch.linalg.svdvals(W).numpy() for W in mats]
        fro = [np.linalg.norm(W.numpy()) for W in mats]
        for l, s in enumerate(svs):
            put(f"layers/sv/W{l + 1}", t, np.pad(s[:topk], (0, max(0, topk - len(s))),
                                                  constant_values=np.nan))
            put(f"sv/W{l + 1}", t, s[:3])
        put("layers/fro", t, fro)
        put("layer_fro", t, fro)
        put("layers/spectral", t, [s[0] for s in svs])
        G = agop(params, shapes, pad, cfg, X).detach().numpy()
        Gs = np.zeros_like(G)
        Gs[0, 0] = Gs[1, 1] = 1.0
        put("agop/alignment", t, np.sum(G * Gs) / (np.linalg.norm(G) * np.linalg.norm(Gs)))
        # seed 004's escape proxy: -Tr[G^T f(theta~)], G = dL/dF at F = 0,
        # theta~ = sqrt(L) theta / ||theta|| (all parameters), L = the weight
        # matrices (conv kernels and the readout)
        F0 = torch.zeros(n, Y.shape[1], dtype=torch.float64, requires_grad=True)
        (G0,) = torch.autograd.grad(half_mean(F0, Y), F0)
        with torch.no_grad():
            nrm = torch.sqrt(sum((p ** 2).sum() for p in params))
            tt = [p * (np.sqrt(len(mats)) / nrm) for p in params]
            put("escape/speed", t, -(G0 * forward(tt, shapes, pad, cfg, X)).sum().item())
        # activation spectra: each ReLU's output as n x C H W (a row per
        # sample): top-k singular values (torch.linalg.svdvals), NaN-padded,
        # and ||relu(Z) - Z||_F^2 / ||Z||_F^2, Z its input (the conv output)
        with torch.no_grad():
            a, ratios = X, []
            ntkp = cfg["param"] == 1
            for l in range(cfg["nconv"]):
                W, b, fan = params[2 * l], params[2 * l + 1], shapes[2 * l][2]
                z = Fn.conv2d(a, (fan ** -0.5 if ntkp else 1.0) * W,
                              (cfg["beta"] if ntkp else 1.0) * b, stride=cfg["t"], padding=pad)
                a = torch.relu(z)
                s = torch.linalg.svdvals(a.reshape(n, -1)).numpy()
                put(f"activations/sv/A{l + 1}", t, np.pad(s[:topk], (0, max(0, topk - len(s))),
                                                           constant_values=np.nan))
                ratios.append((((a - z) ** 2).sum() / (z ** 2).sum()).item())
            put("activations/nonlinearity", t, ratios)
        put("loss", t, half_mean(forward(params, shapes, pad, cfg, X), Y).item())
        L = half_mean(forward(params, shapes, pad, cfg, X), Y)
        grads = torch.autograd.grad(L, params)
        with torch.no_grad():
            params = [(p - lr * g).requires_grad_(True) for p, g in zip(params, grads)]
    return ref, K0


def compare(series, ref, names):
    worst, nval = 0.0, 0
    got = {s[0]: (s[3], s[4]) for s in series}
    for name in names:
        if name not in got:
            print(f"  missing series {name}")
            return float("inf"), 0
        for st, row in zip(*got[name]):
            want = ref[name][int(st)]
            row = np.atleast_1d(row)
            if row.shape != want.shape or not np.array_equal(np.isnan(row), np.isnan(want)):
                print(f"  {name} step {st}: {row} vs {want}")
                return float("inf"), 0
            m = ~np.isnan(want)
            scale = np.max(np.abs(want[m])) if m.any() else 1.0
            scale = scale if scale > 0 else 1.0  # kernel_change at step 0: 0, absolute
            if m.any():
                worst = max(worst, np.max(np.abs(row[m] - want[m])) / scale)
            nval += int(m.sum())
    return worst, nval


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    dump, sweep, store = sys.argv[1:]
    pts, cfg, shapes, pad, theta0, X, Y = point0(dump, sweep, store)
    if sorted(pts) != [0, 1]:
        print("FAIL: want points 0 (gd) and 1 (sgd) in", store)
        return 1
    steps = max(int(s[3][-1]) for s in pts[0] if s[0] == "loss")
    ref, K0 = reference(cfg, shapes, pad, theta0, X, Y, cfg["lr"], steps, [1, 3], 4)
    names = sorted(ref)
    worst, nval = compare(pts[0], ref, names)
    ok = worst <= TOL and nval > 0
    print(f"gd point: {len(names)} series, {nval} values against PyTorch, max rel err {worst:.2e}"
          + ("" if ok else "  FAIL"))
    # the SGD point: same theta_0 and data
    ntk0 = [n for n in names if n.startswith("ntk/") and n != "ntk/batch_critical_lr"]
    got1 = {s[0]: (s[3], s[4]) for s in pts[1]}
    w1 = max(np.max(np.abs(np.atleast_1d(got1[n][1][0]) - ref[n][0])) /
             (np.max(np.abs(ref[n][0])) if ref[n][0].any() else 1.0) for n in ntk0)
    n, b = X.shape[0], 6
    lam_b = 2 * b / got1["ntk/batch_critical_lr"][1][0]
    lam0, dmin = np.linalg.eigvalsh(K0)[-1], np.min(np.diag(K0))
    ok1 = w1 <= TOL and int(got1["ntk/batch_critical_lr"][0][0]) == 0 and dmin <= lam_b <= lam0 * (1 + 1e-12)
    print(f"sgd point: step-0 NTK series max rel err {w1:.2e}; step-0 batch lambda_max {lam_b:.6g} in "
          f"[{dmin:.6g}, {lam0:.6g}]" + ("" if ok1 else "  FAIL"))
    print("cnn_diag_sweep:", "ok" if ok and ok1 else "MISMATCH")
    return 0 if ok and ok1 else 1


if __name__ == "__main__":
    sys.exit(main())
