#!/usr/bin/python3
"""dynsweep's CNN Hessian-vector products (ds_cnn_hvp, src/nn/cnnrop.c)
and Jacobian-vector products (ds_cnn_jvp) against PyTorch float64: functorch
jvp of the gradient (forward-over-reverse) and jvp of the outputs.

For each layer list of tests/test_cnn.c (pooling, residual blocks, hidden
dense, and the named nets cnn5, myrtle5, tf_mnist, wrn-10-1, tf_mnist
overparam, the three DAG lists), `test_cnn --dump-hvp` writes the net, theta, the images, a random
direction v and H v for squared error (random targets) and cross-entropy
(one-hot targets; nets of several outputs), then J v, dropout off. PyTorch rebuilds the net (cnn_layers_torch.py)
and H v and J v must agree to 1e-10 relative to their largest entries.

Usage: cnn_hvp_torch.py TEST_CNN_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as Fn
    import functorch
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn_layers_torch as cl  # noqa: E402

TOL = 1e-10


def check(binary, k, tmp):
    path = os.path.join(tmp, f"hvp{k}.bin")
    subprocess.run([binary, "--dump-hvp", path, str(k)], check=True)
    cfg, layers, d = cl.read_dump(path)
    shapes = cl.plan(cfg, layers)
    n, dout = cfg["n"], cfg["dout"]
    P = sum(int(np.prod(s)) for _, s, _ in shapes)
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    o = 0

    def take(count):
        nonlocal o
        o += count
        return d[o - count:o]

    theta, X, v = take(P), take(din * n), take(P)
    X = torch.tensor(X.reshape(n, cfg["c0"], cfg["h0"], cfg["w0"]).copy())
    params = tuple(p.detach() for p in cl.unpack(theta, shapes))
    vs = tuple(p.detach() for p in cl.unpack(v, shapes))
    cl.dag_masks(layers, params)
    units = [int(np.prod(L["out"])) for L in layers if L["kind"] == cl.DROP]
    masks = [torch.ones(n, u, dtype=torch.float64) for u in units]  # dropout off
    errs = []
    for q, name in enumerate(["mse", "ce"]):
        Y = torch.tensor(take(dout * n).reshape(n, dout).copy())
        Hv = take(P)
        if q == 1 and dout == 1:  # cross-entropy of one output is identically 0
            continue

        def loss(*p):
            F = cl.forward(cfg, layers, list(p), X, masks)
            if q == 0:
                return ((F - Y) ** 2).sum() / n
            # log-softmax by hand (its backward has no forward AD in torch 1.13)
            lse = torch.log(torch.exp(F).sum(dim=1, keepdim=True))
            return -(Y * (F - lse)).sum() / n

        g = functorch.grad(loss, argnums=tuple(range(len(params))))
        _, hv = functorch.jvp(lambda *p: g(*p), params, vs)
        errs.append((name, cl.relerr(Hv, cl.pack(hv, shapes)), float(np.max(np.abs(Hv)))))
    JV = take(dout * n).reshape(n, dout)
    assert o == len(d), (o, len(d))
    _, jv = functorch.jvp(lambda *p: cl.forward(cfg, layers, list(p), X, masks), params, vs)
    errs.append(("jvp", cl.relerr(JV, jv.detach().numpy()), float(np.max(np.abs(JV)))))
    net = " ".join(cl.NAMES[L["kind"]] for L in layers[:-1])
    print(f"hvp {k}: [{net}] {P} params: " +
          ", ".join(f"{a} max rel err {e:.2e} (|Hv| {h:.3g})" for a, e, h in errs))
    ok = all(e <= TOL and h > 0 for _, e, h in errs)
    if not ok:
        print(f"  FAIL hvp {k}: tolerance {TOL}")
    return ok


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    binary = sys.argv[1]
    count = int(subprocess.run([binary, "--count-layers"], check=True, capture_output=True,
                               text=True).stdout)
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([check(binary, k, tmp) for k in range(count)])
    print("cnn_hvp_torch:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
