#!/usr/bin/python3
"""dynsweep's f_quad of a CNN (ds_cnn_quad, src/nn/cnnquad.c) against PyTorch
float64 with functorch, for the nets of tests/test_cnn_quad.c (2-layer CNN,
avg/max pooling, gap, residual blocks with both shortcuts, hidden dense with
dropout, myrtle5, tf_mnist with dropout, wrn-10-1, tf_mnist overparam, and
seed 003's DenseNet-DAG block after a flatten, after conv + relu and as the
first layer; its edge masks are read off theta0's exact zeros,
cnn_layers_torch.dag_masks):

  - J v = jvp(f, theta0, v) and D2f(theta0)[v, v] = jvp of (p -> jvp(f, p, v))
    along v (jvp of jvp), dropout off;
  - 8 GD steps on the f_quad loss (1/n) sum (f_quad - y)^2 with dropout on
    (step s: the masks of step s), f_quad(theta) = f(theta0) + J d + 1/2
    D2f[d, d] by jvp of jvp and its gradient by functorch.grad through them
    (reverse over forward over forward): every loss and the final theta.

Agreement to 1e-10 relative to the largest entry is required; the network
itself (f, not f_quad) must differ, so the check has teeth.

Usage: cnn_quad_torch.py TEST_CNN_QUAD_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
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


def f_quad_parts(f, params, d):
    """(f(theta0), J d, D2f[d, d]) by forward mode: jvp, and jvp of jvp."""
    F0, Jd = functorch.jvp(f, params, d)
    _, Qd = functorch.jvp(lambda *p: functorch.jvp(f, p, d)[1], params, d)
    return F0, Jd, Qd


def check(binary, k, tmp):
    c = cl.Case(binary, "--dump", k, tmp, "quad")
    cfg, layers, shapes, P, take = c.cfg, c.layers, c.shapes, c.P, c.take
    n, dout, steps = cfg["n"], cfg["dout"], cfg["steps"]
    theta0 = take(P)
    X = torch.tensor(c.images().copy())
    Y = torch.tensor(take(dout * n).reshape(n, dout).copy())
    v = take(P)
    JV, QV = take(dout * n).reshape(n, dout), take(dout * n).reshape(n, dout)
    losses, thetaT = take(steps + 1), take(P)
    masks = c.masks(steps)
    c.done()
    p0 = tuple(p.detach() for p in cl.unpack(theta0, shapes))
    vs = tuple(p.detach() for p in cl.unpack(v, shapes))
    cl.dag_masks(layers, p0)
    off = [torch.ones(n, u, dtype=torch.float64) for u in c.units]
    f = lambda *p: cl.forward(cfg, layers, list(p), X, off)  # noqa: E731
    _, jv, qv = f_quad_parts(f, p0, vs)
    errs = {"Jv": cl.relerr(JV, jv.numpy()), "D2f[v,v]": cl.relerr(QV, qv.numpy())}

    def quad_loss(params, mk):
        g = lambda *p: cl.forward(cfg, layers, list(p), X, mk)  # noqa: E731
        dd = tuple(a - b for a, b in zip(params, p0))
        F0, Jd, Qd = f_quad_parts(g, p0, dd)
        return (((F0 + Jd + 0.5 * Qd) - Y) ** 2).sum() / n

    grad = functorch.grad(quad_loss)
    params, lerr, net = p0, 0.0, 0.0
    for s in range(steps + 1):
        L = quad_loss(params, masks[s]).item()
        lerr = max(lerr, abs(losses[s] - L) / abs(L))
        Lnet = ((cl.forward(cfg, layers, list(params), X, masks[s]) - Y) ** 2).sum().item() / n
        net = max(net, abs(losses[s] - Lnet) / abs(Lnet))
        if s < steps:
            g = grad(params, masks[s])
            params = tuple((p - cfg["lr"] * q).detach() for p, q in zip(params, g))
    errs["loss"], errs["theta"] = lerr, cl.relerr(thetaT, cl.pack(params, shapes))
    names = " ".join(cl.NAMES[L["kind"]] for L in layers[:-1])
    print(f"quad {k}: [{names}] {P} params, f_quad loss {losses[0]:.4g} -> {losses[-1]:.4g}, "
          f"|D2f[v,v]| {np.max(np.abs(QV)):.3g}: max rel err "
          + ", ".join(f"{a} {e:.2e}" for a, e in errs.items())
          + f"; the network itself differs by {net:.2e}")
    ok = (all(e <= TOL for e in errs.values()) and np.max(np.abs(QV)) > 0 and net > 1e3 * TOL
          and losses[-1] < losses[0])
    if not ok:
        print(f"  FAIL quad {k}: tolerance {TOL}, f_quad equal to the net (no test) or the "
              "loss did not decrease")
    return ok


def main():
    return replay_all("cnn_quad_torch", __doc__, "--count", check)


if __name__ == "__main__":
    sys.exit(main())
