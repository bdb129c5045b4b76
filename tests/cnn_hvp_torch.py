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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import functorch
    import cnn_layers_torch as cl
    from cnn_torch import replay_all
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

TOL = 1e-10


def check(binary, k, tmp):
    c = cl.Case(binary, "--dump-hvp", k, tmp, "hvp")
    cfg, layers, shapes, P, take = c.cfg, c.layers, c.shapes, c.P, c.take
    n, dout = cfg["n"], cfg["dout"]
    theta = take(P)
    X = torch.tensor(c.images().copy())
    v = take(P)
    params = tuple(p.detach() for p in cl.unpack(theta, shapes))
    vs = tuple(p.detach() for p in cl.unpack(v, shapes))
    cl.dag_masks(layers, params)
    masks = [torch.ones(n, u, dtype=torch.float64) for u in c.units]  # dropout off
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
    c.done()
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
    return replay_all("cnn_hvp_torch", __doc__, "--count-layers", check)


if __name__ == "__main__":
    sys.exit(main())
