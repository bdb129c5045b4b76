#!/usr/bin/python3
"""dynsweep's CNN diagnostics (src/diag/cnn.c, layers.c, agop.c) against PyTorch float64.

For each configuration of tests/test_cnn_diag.c (NTK and standard
parameterisation, strides 1 and 2, 'same'/'valid', odd and even kernels,
flatten and GAP readouts, 1 and several outputs), `test_cnn_diag --dump`
writes the net's weights, 5 images, dynsweep's NTK K (kn x kn), all its
eigenvalues, each weight matrix's singular values and the AGOP G over the
input pixels. PyTorch rebuilds the net (tests/cnn_torch.py's forward) and
computes
  - J = functorch.jacrev over the parameters, K = J J^T, torch.linalg.eigvalsh;
  - torch.linalg.svdvals of each conv kernel reshaped C_out x C_in s^2 and of
    the readout;
  - G = (1/n) sum_i J_x(x_i)^T J_x(x_i), J_x by functorch.vmap(jacrev) in the inputs.
Tolerances: K and G entrywise 1e-12 of their largest entry, eigenvalues 1e-10
relative (the top 5 each to itself, the rest to lambda_max), singular values
1e-12 relative to the largest.

Usage: cnn_diag_torch.py TEST_CNN_DIAG_BINARY  (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import torch
    from functorch import jacrev, vmap
    from cnn_torch import layout, unpack, forward, read_header, replay_all
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

TOL_K, TOL_EV, TOL_SV = 1e-12, 1e-10, 1e-12


def ntk(params, shapes, pad, cfg, X):
    """K (kn x kn), row o + k i, from functorch's Jacobian over the parameters."""
    n, k = X.shape[0], cfg["dout"]
    jac = jacrev(lambda *p: forward(list(p), shapes, pad, cfg, X), argnums=tuple(range(len(params))))(
        *params)
    J = torch.cat([j.reshape(n * k, -1) for j in jac], dim=1)  # (n, k, ...) -> row i k + o
    return J @ J.T


def agop(params, shapes, pad, cfg, X):
    def one(x):
        return forward(params, shapes, pad, cfg, x[None])[0]  # (k,)
    Jx = vmap(jacrev(one))(X)  # (n, k, C, H, W)
    n = X.shape[0]
    Jx = Jx.reshape(n * cfg["dout"], -1)
    return Jx.T @ Jx / n


def check(binary, c, tmp):
    path = os.path.join(tmp, f"d{c}.bin")
    subprocess.run([binary, "--dump", path, str(c)], check=True)
    cfg, _, d = read_header(path)
    shapes, pad = layout(cfg)
    n, k = cfg["n"], cfg["dout"]
    kn, din = k * n, cfg["c0"] * cfg["h0"] * cfg["w0"]
    P = sum(int(np.prod(s)) for _, s, _ in shapes)
    o = 0
    theta = d[o:o + P]; o += P
    X = d[o:o + din * n].reshape(n, cfg["c0"], cfg["h0"], cfg["w0"]); o += din * n
    K = d[o:o + kn * kn].reshape(kn, kn); o += kn * kn  # symmetric: order does not matter
    ev = d[o:o + kn]; o += kn
    params, _ = unpack(theta, shapes)
    mats = [p.detach().reshape(p.shape[0], -1) for (kind, _, _), p in zip(shapes, params)
            if kind in ("convW", "readW")]
    sv = []
    for W in mats:
        m = min(W.shape)
        sv.append(d[o:o + m]); o += m
    G = d[o:o + din * din].reshape(din, din); o += din * din
    assert o == len(d), (o, len(d))
    Xt = torch.tensor(X.copy())
    Kt = ntk(params, shapes, pad, cfg, Xt).detach().numpy()
    evt = np.sort(np.linalg.eigvalsh(Kt))[::-1].copy()
    evt_torch = torch.linalg.eigvalsh(torch.tensor(Kt)).flip(0).numpy()
    Gt = agop(params, shapes, pad, cfg, Xt).detach().numpy()
    e = {}
    e["K"] = np.max(np.abs(K - Kt)) / np.max(np.abs(Kt))
    top = min(5, kn)
    e["ev_top"] = np.max(np.abs(ev[:top] - evt_torch[:top]) / np.abs(evt_torch[:top]))
    e["ev_all"] = np.max(np.abs(ev - evt_torch)) / evt_torch[0]
    e["sv"] = max(np.max(np.abs(s - torch.linalg.svdvals(W).numpy())) / s[0] for s, W in zip(sv, mats))
    e["G"] = np.max(np.abs(G - Gt)) / np.max(np.abs(Gt))
    ok = (e["K"] <= TOL_K and e["ev_top"] <= TOL_EV and e["ev_all"] <= TOL_EV and e["sv"] <= TOL_SV
          and e["G"] <= TOL_K)
    print(f"config {c}: {cfg['c0']}x{cfg['h0']}x{cfg['w0']}, {cfg['nconv']} conv {cfg['ch']}ch "
          f"{cfg['s']}x{cfg['s']} stride {cfg['t']} {'same' if cfg['same'] else 'valid'}, "
          f"{'gap' if cfg['readout'] else 'flatten'}, {'ntk' if cfg['param'] == 1 else 'standard'}, "
          f"k {k}, K {kn}x{kn} lambda_max {evt[0]:.6g}: rel err "
          + ", ".join(f"{a} {v:.1e}" for a, v in e.items()) + ("" if ok else "  FAIL"))
    return ok


def main():
    return replay_all("cnn_diag_torch", __doc__, "--count", check)


if __name__ == "__main__":
    sys.exit(main())
