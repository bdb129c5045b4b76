#!/usr/bin/python3
"""dynsweep's layer-list CNNs (src/nn/cnn.c, cnnlayers.c, cnnnets.c) against
PyTorch float64 autograd.

For each layer list of tests/test_cnn.c (avg pooling with a floored window,
max pooling with stride, residual blocks with identity and 1x1 conv
shortcuts, a hidden dense layer with dropout, and the named nets cnn5,
myrtle5, tf_mnist with dropout 0.5, wrn-10-1, tf_mnist with 002's
over-parameterised (factored, bias-free) dense layers, and seed 003's
DenseNet-DAG: named dag, conv + dag (standard), a 3-layer block without
drops, and the named dag with its readout masked too (model.dag_readout_drop;
ntk and standard); its edge masks, and a masked readout's, are read off the
exact zeros of the initial weights),
`test_cnn --dump-layers`
writes the layers, the initial weights, the images and targets, dynsweep's
forward output, loss gradient and inputs' gradient, the losses and final
weights of 12 GD steps on L = (1/n) sum (f - y)^2 with dropout on (step s
draws new masks), and those masks. PyTorch rebuilds the net from the layer
list (conv2d, avg_pool2d, max_pool2d, linear, the masks as given) and must
agree to 1e-12 relative: output, gradients (relative to their largest
entry), every loss, the final weights. The masks' values are tested in
test_cnn (determinism); here they are inputs.

Usage: cnn_layers_torch.py TEST_CNN_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch.nn.functional as Fn
    import cnn_torch
    from cnn_torch import replay_all
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

TOL = 1e-12
CONV, RELU, AVG, MAX, GAP, FLAT, DENSE, RES, DROP, DAG = range(10)
NAMES = ["conv", "relu", "avgpool", "maxpool", "gap", "flatten", "dense", "resblock", "dropout",
         "dag"]


def read_dump(path):
    raw = open(path, "rb").read()
    nl, c0, h0, w0, dout, param, n, steps, ntest, rmask = (
        int(v) for v in np.frombuffer(raw[:40], np.int32))
    beta, lr = np.frombuffer(raw[40:56], np.float64)
    o, layers = 56, []
    for _ in range(nl):
        kind, cout, size, stride, same, nobias = (
            int(v) for v in np.frombuffer(raw[o:o + 24], np.int32))
        p = float(np.frombuffer(raw[o + 24:o + 32], np.float64)[0])
        layers.append(dict(kind=kind, cout=cout, size=size, stride=stride or size, same=same, p=p,
                           nobias=nobias))
        o += 32
    # the readout; rmask: masked (a dag's rdrop, model.dag_readout_drop)
    layers.append(dict(kind=DENSE, cout=dout, size=0, stride=0, same=0, p=0.0, nobias=0,
                       masked=rmask))
    cfg = dict(c0=c0, h0=h0, w0=w0, dout=dout, ntk=param == 1, n=n, steps=steps, ntest=ntest,
               beta=float(beta) if param == 1 else 1.0, lr=float(lr))
    return cfg, layers, np.frombuffer(raw[o:], np.float64)


def conv_shape(c, h, w, cout, s, t, same):
    pad = (s - 1) // 2 if same else 0
    return (cout, (h + 2 * pad - s) // t + 1, (w + 2 * pad - s) // t + 1), pad


def plan(cfg, layers):
    """Per layer: its parameters as (kind, shape, fan_in) in theta order, and
    the convs' padding; also the dropout layers' unit counts."""
    c, h, w = cfg["c0"], cfg["h0"], cfg["w0"]
    for L in layers:
        L["params"], L["in"] = [], (c, h, w)
        k = L["kind"]
        if k in (CONV, RES):
            (c2, h2, w2), L["pad"] = conv_shape(c, h, w, L["cout"], L["size"], L["stride"],
                                                L["same"])
            convs = [(L["cout"], c, L["size"])]
            if k == RES:
                convs.append((L["cout"], L["cout"], L["size"]))
                L["shortcut"] = c != L["cout"] or L["stride"] != 1
                if L["shortcut"]:
                    convs.append((L["cout"], c, 1))
            for co, ci, s in convs:
                L["params"] += [("W", (co, ci, s, s), ci * s * s), ("b", (co,), ci * s * s)]
            c, h, w = c2, h2, w2
        elif k in (AVG, MAX):
            h, w = (h - L["size"]) // L["stride"] + 1, (w - L["size"]) // L["stride"] + 1
        elif k == GAP:
            h = w = 1
        elif k == FLAT:
            c, h, w = c * h * w, 1, 1
        elif k == DAG:  # size = depth; W_k m x (din + k m) row-major, masked zeros included
            din, m = c * h * w, L["cout"]
            L["params"] += [("G", (m, din + q * m), None) for q in range(L["size"])]
            c, h, w = din + L["size"] * m, 1, 1
        elif k == DENSE:
            din = c * h * w
            # the readout (last) column-major, hidden dense layers row-major (cnn.h)
            L["params"] += [("R" if L is not layers[-1] else "D", (L["cout"], din), din)]
            if not L["nobias"]:
                L["params"] += [("b", (L["cout"],), din)]
            c, h, w = L["cout"], 1, 1
        L["out"] = (c, h, w)
    return [p for L in layers for p in L["params"]]


# the layer list's dense weights ("D") are stored column-major, as
# cnn_torch.py's readout ("readW")
def unpack(theta, shapes):
    params, off = cnn_torch.unpack(theta, shapes, colmajor="D")
    assert off == len(theta), (off, len(theta))
    return params


def views(flat, shapes):
    """unpack's parameters as views of a flat torch theta, so that autograd
    differentiates through theta itself (a Hessian of the flattened theta:
    cnn_dropout_sweep.py)."""
    return cnn_torch.params_of(flat, shapes, colmajor="D")


def pack(tensors, shapes):
    return cnn_torch.pack(tensors, shapes, colmajor="D")


def dag_masks(layers, params):
    """The DAG blocks' edge masks, read off the initial weights: dynsweep
    sets the dropped ones to exactly 0 (N(0, 1) or uniform draws are never
    0), so M = [W0 != 0]; they stay fixed while the weights train. A masked
    readout's mask likewise (L["RM"])."""
    it = iter(params)
    for L in layers:
        for kind, _, _ in L["params"]:
            W = next(it)
            if kind == "G":
                L.setdefault("M", []).append((W.detach() != 0).to(torch.float64))
            if kind == "D" and L.get("masked"):
                L["RM"] = (W.detach() != 0).to(torch.float64)
        if L["kind"] == DAG:
            L["M"] = L["M"][-L["size"]:]


def forward(cfg, layers, params, X, masks, relu=None):
    """The net's output (n x outputs). masks: the dropout layers' masks in
    order (None: dropout off); relu(l, part, z): the ReLU of layer l (part:
    a resblock's 0 = relu(x), 1 = relu(conv1); a DAG's depth), torch.relu
    by default (cnn_act_torch.py records Z and relu(Z) through it)."""
    ntk, beta = cfg["ntk"], cfg["beta"]
    if relu is None:
        def relu(l, part, z):
            return torch.relu(z)
    it = iter(zip(params, [p for L in layers for p in L["params"]]))

    def conv(a, stride, pad):
        (W, (_, _, fan)), (b, _) = next(it), next(it)
        alpha = fan ** -0.5 if ntk else 1.0
        return Fn.conv2d(a, alpha * W, beta * b, stride=stride, padding=pad)

    a, mi = X, iter(masks or [])
    for l, L in enumerate(layers):
        k = L["kind"]
        if k == CONV:
            a = conv(a, L["stride"], L["pad"])
        elif k == RELU:
            a = relu(l, 0, a)
        elif k == AVG:
            a = Fn.avg_pool2d(a, L["size"], L["stride"])
        elif k == MAX:
            a = Fn.max_pool2d(a, L["size"], L["stride"])
        elif k == GAP:
            a = a.mean(dim=(2, 3), keepdim=True)
        elif k == FLAT:
            a = a.reshape(a.shape[0], -1, 1, 1)
        elif k == DROP:
            if masks is not None:
                a = a * next(mi).reshape(a.shape)
        elif k == DAG:  # seed 003 Eq. A.5 on the DAG left after dropping edges
            cat = a.reshape(a.shape[0], -1)
            for q, M in enumerate(L["M"]):
                W, _ = next(it)
                deg = M.sum(1)
                s = torch.where(deg > 0, deg.clamp(min=1) ** -0.5, torch.zeros_like(deg))
                E = (s[:, None] * M) * W if ntk else M * W
                cat = torch.cat([cat, relu(l, q, Fn.linear(cat, E))], 1)
            a = cat[:, :, None, None]
        elif k == DENSE:
            W, (_, _, fan) = next(it)
            b = None if L["nobias"] else beta * next(it)[0]
            alpha = fan ** -0.5 if ntk else 1.0
            if "RM" in L:  # a masked readout: each unit by 1/sqrt(its kept in-degree) (ntk)
                deg = L["RM"].sum(1)
                s = torch.where(deg > 0, deg.clamp(min=1) ** -0.5, torch.zeros_like(deg))
                W, alpha = (s[:, None] * L["RM"] if ntk else L["RM"]) * W, 1.0
            a = Fn.linear(a.reshape(a.shape[0], -1), alpha * W, b)[:, :, None, None]
        elif k == RES:  # pre-activation block, no BatchNorm
            r = relu(l, 0, a)
            y = conv(relu(l, 1, conv(r, L["stride"], L["pad"])), 1, L["pad"])
            a = y + (conv(r, L["stride"], 0) if L["shortcut"] else a)
    return a.reshape(a.shape[0], -1)


def relerr(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


class Case:
    """Case k of a C test binary's layer-list dumps (test_cnn --dump-layers,
    --dump-hvp; test_cnn_quad --dump): `binary flag PATH k` writes it, read_dump
    reads it; cfg, layers, shapes (plan), P (parameters), din (inputs per
    sample), units (the dropout layers' sizes); take(count) the body's next
    count float64, masks(steps) the dropout masks of steps 0..steps,
    done() asserts the body is used up."""

    def __init__(self, binary, flag, k, tmp, stem):
        path = os.path.join(tmp, f"{stem}{k}.bin")
        subprocess.run([binary, flag, path, str(k)], check=True)
        self.cfg, self.layers, self.d = read_dump(path)
        self.shapes = plan(self.cfg, self.layers)
        self.P = sum(int(np.prod(s)) for _, s, _ in self.shapes)
        self.din = self.cfg["c0"] * self.cfg["h0"] * self.cfg["w0"]
        self.units = [int(np.prod(L["out"])) for L in self.layers if L["kind"] == DROP]
        self.o = 0

    def take(self, count):
        self.o += count
        return self.d[self.o - count:self.o]

    def images(self):
        """The next n images, (n, c0, h0, w0)."""
        c = self.cfg
        return self.take(self.din * c["n"]).reshape(c["n"], c["c0"], c["h0"], c["w0"])

    def masks(self, steps):
        n = self.cfg["n"]
        return [[torch.tensor(self.take(u * n).reshape(n, u).copy()) for u in self.units]
                for _ in range(steps + 1)]

    def done(self):
        assert self.o == len(self.d), (self.o, len(self.d))


def check(binary, k, tmp):
    c = Case(binary, "--dump-layers", k, tmp, "layers")
    cfg, layers, shapes, P, din, take = c.cfg, c.layers, c.shapes, c.P, c.din, c.take
    n, dout, steps = cfg["n"], cfg["dout"], cfg["steps"]
    theta0, X = take(P), c.images()
    Y = take(dout * n).reshape(n, dout)
    F0, G0, dX0 = take(dout * n).reshape(n, dout), take(P), take(din * n)
    losses, thetaT = take(steps + 1), take(P)
    masks = c.masks(steps)
    c.done()
    Xt = torch.tensor(X.copy(), requires_grad=True)
    Yt = torch.tensor(Y.copy())
    params = unpack(theta0, shapes)
    dag_masks(layers, params)
    errs = {"F": 0.0, "grad": 0.0, "dX": 0.0, "loss": 0.0, "theta": 0.0}
    for step in range(steps + 1):
        F = forward(cfg, layers, params, Xt, masks[step])
        L = ((F - Yt) ** 2).sum() / n
        grads = torch.autograd.grad(L, params, retain_graph=step == 0)
        if step == 0:
            errs["F"] = relerr(F0, F.detach().numpy())
            errs["grad"] = relerr(G0, pack(grads, shapes))
            # dynsweep's dX is the gradient of sum F .* Y (Y as the cotangent)
            (gx,) = torch.autograd.grad((F * Yt).sum(), Xt)
            errs["dX"] = relerr(dX0, gx.detach().numpy().reshape(-1))
        errs["loss"] = max(errs["loss"], abs(losses[step] - L.item()) / abs(L.item()))
        if step < steps:
            with torch.no_grad():
                params = [(p - cfg["lr"] * g).requires_grad_(True) for p, g in zip(params, grads)]
    errs["theta"] = relerr(thetaT, pack(params, shapes))
    net = " ".join(NAMES[L["kind"]] for L in layers[:-1])
    print(f"list {k}: {cfg['c0']}x{cfg['h0']}x{cfg['w0']} [{net}] {P} params, loss "
          f"{losses[0]:.4g} -> {losses[-1]:.4g}: max rel err "
          + ", ".join(f"{a} {e:.2e}" for a, e in errs.items()))
    live = np.max(np.abs(dX0)) > 0  # a dead net (every ReLU off) would test nothing
    ok = all(e <= TOL for e in errs.values()) and losses[-1] < losses[0] and live
    if not ok:
        print(f"  FAIL list {k}: tolerance {TOL}, the loss did not decrease, or dX = 0")
    return ok


def main():
    return replay_all("cnn_layers_torch", __doc__, "--count-layers", check)


if __name__ == "__main__":
    sys.exit(main())
