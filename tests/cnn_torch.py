#!/usr/bin/python3
"""dynsweep's CNN (src/nn/cnn.c) against PyTorch float64 autograd.

For each configuration of tests/test_cnn.c (NTK and standard
parameterisation, 'same'/'valid' padding, strides 1 and 2, odd and even
kernels, flatten and global-average-pooling readouts, and, when Debian's
dataset-fashion-mnist is installed, 8 Fashion-MNIST images read by the sweeps'
IDX loader), `test_cnn --dump`
writes the initial weights, the images, the targets, dynsweep's forward
output and loss gradient, and the losses and final weights of 20 GD steps on
L = (1/n) sum (f - y)^2. PyTorch rebuilds the net from the same weights
(torch.nn.functional.conv2d / linear, its own autograd) and must agree:
output, gradient, every loss and the final weights to 1e-12 relative (the
gradient and weights relative to their largest entry).

Usage: cnn_torch.py TEST_CNN_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as Fn
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

TOL = 1e-12


def read_header(path):
    """A dump of tests/test_cnn.c or cnn_sweep_dump.c: 13 int32 (c0 h0 w0 nconv ch s t same
    readout dout param n, then steps or the test count), beta and lr (float64), then the
    float64 body. Returns (cfg without the 13th int, the 13th int, body)."""
    raw = open(path, "rb").read()
    c0, h0, w0, nconv, ch, s, t, same, readout, dout, param, n, last = (
        int(v) for v in np.frombuffer(raw[:52], dtype=np.int32))
    beta, lr = np.frombuffer(raw[52:68], dtype=np.float64)
    cfg = dict(c0=c0, h0=h0, w0=w0, nconv=nconv, ch=ch, s=s, t=t, same=same, readout=readout,
               dout=dout, param=param, n=n, beta=float(beta), lr=float(lr))
    return cfg, last, np.frombuffer(raw[68:], dtype=np.float64)


def read_dump(path):
    cfg, steps, d = read_header(path)
    cfg["steps"] = steps
    return cfg, d


def layout(cfg):
    """Parameter shapes in theta order: conv W (PyTorch order), b; readout W
    (dout x din column-major), b."""
    shapes, c, h, w = [], cfg["c0"], cfg["h0"], cfg["w0"]
    s, t = cfg["s"], cfg["t"]
    pad = (s - 1) // 2 if cfg["same"] else 0
    for _ in range(cfg["nconv"]):
        shapes += [("convW", (cfg["ch"], c, s, s), c * s * s), ("convb", (cfg["ch"],), c * s * s)]
        c, h, w = cfg["ch"], (h + 2 * pad - s) // t + 1, (w + 2 * pad - s) // t + 1
    rdin = c if cfg["readout"] == 1 else c * h * w
    shapes += [("readW", (cfg["dout"], rdin), rdin), ("readb", (cfg["dout"],), rdin)]
    return shapes, pad


def unpack(theta, shapes, colmajor="readW"):
    """theta's layers as leaf tensors (requires_grad); the kind named
    colmajor (a dense readout) is stored column-major dout x din. Also
    returns the number of entries read. cnn_layers_torch.py's layer lists
    call these three with colmajor "D"."""
    params, off = [], 0
    for kind, shp, _ in shapes:
        size = int(np.prod(shp))
        v = theta[off:off + size]
        if kind == colmajor:
            v = v.reshape(shp[1], shp[0]).T
        params.append(torch.tensor(np.ascontiguousarray(v).reshape(shp), dtype=torch.float64,
                                   requires_grad=True))
        off += size
    return params, off


def params_of(flat, shapes, colmajor="readW"):
    """unpack's layers as views of a flat torch theta (so autograd and
    functorch differentiate through theta itself)."""
    out, off = [], 0
    for kind, shp, _ in shapes:
        size = int(np.prod(shp))
        v = flat[off:off + size]
        out.append(v.reshape(shp[1], shp[0]).T if kind == colmajor else v.reshape(shp))
        off += size
    return out


def pack(tensors, shapes, colmajor="readW"):
    out = []
    for (kind, _, _), g in zip(shapes, tensors):
        g = g.detach().numpy()
        out.append((g.T if kind == colmajor else g).reshape(-1))
    return np.concatenate(out)


def forward(params, shapes, pad, cfg, X):
    ntk = cfg["param"] == 1
    beta = cfg["beta"] if ntk else 1.0
    a = X
    for l in range(cfg["nconv"]):
        W, b, fan = params[2 * l], params[2 * l + 1], shapes[2 * l][2]
        alpha = fan ** -0.5 if ntk else 1.0
        a = torch.relu(Fn.conv2d(a, alpha * W, beta * b, stride=cfg["t"], padding=pad))
    a = a.mean(dim=(2, 3)) if cfg["readout"] == 1 else a.reshape(a.shape[0], -1)
    W, b, fan = params[-2], params[-1], shapes[-2][2]
    alpha = fan ** -0.5 if ntk else 1.0
    return Fn.linear(a, alpha * W, beta * b)  # n x dout


def relerr(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def check(binary, k, tmp):
    path = os.path.join(tmp, f"cnn{k}.bin")
    subprocess.run([binary, "--dump", path, str(k)], check=True)
    cfg, d = read_dump(path)
    shapes, pad = layout(cfg)
    n, dout = cfg["n"], cfg["dout"]
    P = sum(int(np.prod(s)) for _, s, _ in shapes)
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    o = 0
    theta0 = d[o:o + P]; o += P
    X = d[o:o + din * n].reshape(n, cfg["c0"], cfg["h0"], cfg["w0"]); o += din * n
    Y = d[o:o + dout * n].reshape(n, dout); o += dout * n
    F0 = d[o:o + dout * n].reshape(n, dout); o += dout * n
    G0 = d[o:o + P]; o += P
    losses = d[o:o + cfg["steps"] + 1]; o += cfg["steps"] + 1
    thetaT = d[o:o + P]; o += P
    assert o == len(d), (o, len(d))
    Xt, Yt = torch.tensor(X.copy()), torch.tensor(Y.copy())
    params, _ = unpack(theta0, shapes)
    errs = {"F": 0.0, "grad": 0.0, "loss": 0.0, "theta": 0.0}
    for step in range(cfg["steps"] + 1):
        F = forward(params, shapes, pad, cfg, Xt)
        L = ((F - Yt) ** 2).sum() / n
        grads = torch.autograd.grad(L, params)
        if step == 0:
            errs["F"] = relerr(F0, F.detach().numpy())
            errs["grad"] = relerr(G0, pack(grads, shapes))
        errs["loss"] = max(errs["loss"], abs(losses[step] - L.item()) / abs(L.item()))
        if step < cfg["steps"]:
            with torch.no_grad():
                params = [(p - cfg["lr"] * g).requires_grad_(True) for p, g in zip(params, grads)]
    errs["theta"] = relerr(thetaT, pack(params, shapes))
    desc = (f"config {k}: {cfg['c0']}x{cfg['h0']}x{cfg['w0']}, {cfg['nconv']} conv "
            f"{cfg['ch']}ch {cfg['s']}x{cfg['s']} stride {cfg['t']} "
            f"{'same' if cfg['same'] else 'valid'}, {'gap' if cfg['readout'] else 'flatten'}, "
            f"{'ntk' if cfg['param'] == 1 else 'standard'}, loss {losses[0]:.4g} -> {losses[-1]:.4g}")
    print(desc + ": max rel err " + ", ".join(f"{a} {e:.2e}" for a, e in errs.items()))
    ok = all(e <= TOL for e in errs.values()) and losses[-1] < losses[0]
    if not ok:
        print(f"  FAIL config {k}: tolerance {TOL}, or the loss did not decrease")
    return ok


def replay_all(name, doc, count_flag, check):
    """The replay scripts' main (this one's, cnn_layers_torch's, cnn_diag_torch's):
    argv[1] is the C binary; `binary count_flag` prints how many cases it
    dumps; check(binary, k, tmpdir) replays case k. Exit 0 ok, 1 mismatch."""
    if len(sys.argv) != 2:
        print(doc)
        return 2
    torch.set_num_threads(1)
    binary = sys.argv[1]
    count = int(subprocess.run([binary, count_flag], check=True, capture_output=True,
                               text=True).stdout)
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([check(binary, k, tmp) for k in range(count)])
    print(f"{name}:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


def main():
    return replay_all("cnn_torch", __doc__, "--count", check)


if __name__ == "__main__":
    sys.exit(main())
