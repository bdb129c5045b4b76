#!/usr/bin/python3
"""Whole short trajectories of dynsweep against PyTorch autograd.

For a linear, a ReLU and a tanh MLP (tanh(sqrt(2) z), with biases), trained
by full-batch GD and by minibatch SGD (with momentum), and for the
trainability-fractal study's net (tanh(sqrt(2) z), mean-field
parameterisation, no bias, one learning rate for the input layer and one for
the output layer, issue 13), the same initial weights and data are given to
both: numpy draws them, h5py writes them, dynsweep reads them through
`data.kind: hdf5` and `model.init: file`, and PyTorch (float64, its own
autograd) trains from them. dynsweep records the training loss at every step;
the two loss series must agree to 1e-10 relative. SGD batches: the reference
re-derives dynsweep's batch order from its documented generator (Philox4x32-10
keyed by splitmix64 of (seed, combo, replica, stream), Fisher-Yates per epoch),
written here independently in Python.

Usage: torch_reference.py DYNSWEEP_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-h5py python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from dynsweep_store import read_points  # noqa: E402

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def philox(key, ctr):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return [c0, c1, c2, c3]


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


class Rng:
    def __init__(self, seed, combo, replica, stream):
        k = splitmix(seed)
        k = splitmix(k ^ combo)
        k = splitmix(k ^ ((replica << 32) | stream))
        self.key, self.ctr, self.buf = [k & M32, k >> 32], 0, []

    def u32(self):
        if not self.buf:
            c = self.ctr
            self.buf = philox(self.key, [c & M32, (c >> 32) & M32, (c >> 64) & M32, (c >> 96) & M32])
            self.ctr += 1
        return self.buf.pop(0)

    def u64(self):
        hi = self.u32()
        return (hi << 32) | self.u32()


def batches(seed, n, b, steps):
    rng, perm, pos = Rng(seed, 0, 0, 3), None, n
    for _ in range(steps):
        out = []
        for _ in range(b):
            if pos == n:
                perm = list(range(n))
                for i in range(n - 1, 0, -1):
                    j = rng.u64() % (i + 1)
                    perm[i], perm[j] = perm[j], perm[i]
                pos = 0
            out.append(perm[pos])
            pos += 1
        yield out


GAIN = 2.0 ** 0.5  # the study's tanh(sqrt(2) z)


def torch_losses(act, Ws, bs, X, Y, opt, lr, steps, batch, mu, seed, meanfield=False, relu_gain=None, lr_in=0, lr_out=0):
    params, groups = [], []
    for l, (W, b) in enumerate(zip(Ws, bs)):
        ps = [torch.tensor(W, requires_grad=True)] + ([torch.tensor(b, requires_grad=True)] if b is not None else [])
        params += ps
        r = lr_in if l == 0 and lr_in else lr_out if l == len(Ws) - 1 and lr_out else lr
        groups.append({"params": ps, "lr": r})
    Xt, Yt = torch.tensor(X), torch.tensor(Y)

    def loss_on(x, y):
        a, k = x, 0
        for l in range(len(Ws)):
            W = params[k]
            z = a @ W.T
            if meanfield:  # W a / sqrt(fan_in); the output once more
                z = z / W.shape[1] ** 0.5
                if l == len(Ws) - 1:
                    z = z / W.shape[1] ** 0.5
            if bs[l] is not None:
                z = z + params[k + 1]
            k += 2 if bs[l] is not None else 1
            a = z
            if act == "relu" and l < len(Ws) - 1:
                a = torch.relu(z) if relu_gain is None else relu_gain * torch.relu(z)
            if act == "tanh" and l < len(Ws) - 1:
                a = torch.tanh(GAIN * z)
        return ((a - y) ** 2).sum() / x.shape[0]  # reduction: mean

    o = torch.optim.SGD(groups, lr=lr, momentum=mu)
    order = batches(seed, X.shape[0], batch, steps) if batch else None
    out = []
    for t in range(steps + 1):
        with torch.no_grad():
            out.append(loss_on(Xt, Yt).item())
        if t == steps:
            break
        o.zero_grad()
        idx = next(order) if batch else None
        L = loss_on(Xt[idx], Yt[idx]) if batch else loss_on(Xt, Yt)
        L.backward()
        o.step()
    return np.array(out)


def dynsweep_losses(exe, tmp, label, seed, steps, model, data, optimizer):
    """(steps, loss) series of point 0 of a one-point sweep run by dynsweep."""
    y = f"""name: torchref
seed: {seed}
model: {model}
data: {data}
loss: {{type: mse, reduction: mean}}
optimizer: {optimizer}
train: {{steps: {steps}, diverge_above: 1e30}}
record: {{every: 1, per_decade: 0, series: [loss]}}
"""
    path = os.path.join(tmp, f"{label}.yaml")
    store = path[:-5] + ".h5"
    open(path, "w").write(y)
    subprocess.run(["mpirun", "--oversubscribe", "-n", "1", exe, "run", path, "-o", store, "-q"], check=True)
    with h5py.File(store, "r") as f:
        pts = read_points(f, [0])
        _, _, _, steps_ds, losses = [x for x in pts[0] if x[0] == "loss"][0]
    return steps_ds, losses


def compare(label, ours, ref, steps, tol):
    """Every step recorded, the loss series within tol relative, and falling."""
    steps_ds, losses = ours
    rel = np.max(np.abs(losses - ref) / np.abs(ref))
    good = np.array_equal(steps_ds, np.arange(steps + 1)) and rel < tol and ref[-1] < ref[0]
    print(f"{'ok' if good else 'FAIL'}: {label}: loss {ref[0]:.6f} -> {ref[-1]:.6f} over {steps} steps, "
          f"max relative difference {rel:.2e}")
    return good, rel


def main():
    exe = sys.argv[1]
    torch.set_num_threads(1)
    rs = np.random.RandomState(11)
    n, d_in, width, d_out, depth, steps, seed = 48, 5, 9, 3, 3, 40, 9
    X = rs.randn(n, d_in)
    Y = np.tanh(X @ rs.randn(d_in, d_out)) + 0.1 * rs.randn(n, d_out)
    dims = [d_in] + [width] * (depth - 1) + [d_out]
    Ws = [rs.randn(dims[l + 1], dims[l]) / np.sqrt(dims[l]) for l in range(depth)]
    bs = [0.1 * rs.randn(dims[l + 1]) for l in range(depth)]
    worst, cases = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        with h5py.File(os.path.join(tmp, "data.h5"), "w") as f:
            f["X"], f["y"] = X, Y
        with h5py.File(os.path.join(tmp, "w0.h5"), "w") as f:
            for l in range(depth):
                f[f"W{l + 1}"], f[f"b{l + 1}"] = Ws[l], bs[l][:, None]
        for act in ("linear", "relu", "tanh"):
            for opt, lr, batch, mu in (("gd", 0.05, 0, 0.0), ("sgd", 0.05, 8, 0.0),
                                       ("momentum", 0.02, 12, 0.9)):
                model = (f"{{type: {act}, width: {width}, depth: {depth}, bias: true, init: file, "
                         f"init_file: {tmp}/w0.h5{', gain: ' + repr(GAIN) if act == 'tanh' else ''}}}")
                ours = dynsweep_losses(exe, tmp, f"{act}-{opt}", seed, steps, model,
                                       f"{{kind: hdf5, path: {tmp}/data.h5, n_train: {n}, n_test: 0, test_fraction: 0}}",
                                       f"{{type: {opt}, lr: {lr}, batch_size: {batch}, momentum: {mu}}}")
                ref = torch_losses(act, Ws, bs, X, Y, opt, lr, steps, batch, mu, seed)
                good, rel = compare(f"{act:6s} {opt:8s} batch {batch:2d}", ours, ref, steps, 1e-10)
                worst, cases = max(worst, rel), cases + 1
                if not good:
                    print(f"torch_reference: {cases - 1} passed, 1 failed")
                    return 1
        # issue 13: the bias-free deep linear net, whose step goes through the
        # end-to-end product P = W3 W2 W1 (n = 48 samples against d_in = 5:
        # src/nn/mlp.c, ds_mlp_e2e_taken), standard and mean field
        with h5py.File(os.path.join(tmp, "w0_nb.h5"), "w") as f:
            for l in range(depth):
                f[f"W{l + 1}"] = Ws[l]
        for param, opt, lr, batch, mu, lr_in, lr_out in (
                ("standard", "gd", 0.05, 0, 0.0, 0, 0), ("standard", "sgd", 0.05, 8, 0.0, 0, 0),
                ("standard", "momentum", 0.02, 12, 0.9, 0, 0), ("meanfield", "gd", 1.0, 0, 0.0, 0.6, 2.5)):
            model = (f"{{type: linear, param: {param}, width: {width}, depth: {depth}, bias: false, "
                     f"init: file, init_file: {tmp}/w0_nb.h5}}")
            lrs = f", lr_in: {lr_in}, lr_out: {lr_out}" if lr_in else ""
            ours = dynsweep_losses(exe, tmp, f"linear-nb-{param}-{opt}", seed, steps, model,
                                   f"{{kind: hdf5, path: {tmp}/data.h5, n_train: {n}, n_test: 0, test_fraction: 0}}",
                                   f"{{type: {opt}, lr: {lr}, batch_size: {batch}, momentum: {mu}{lrs}}}")
            ref = torch_losses("linear", Ws, [None] * depth, X, Y, opt, lr, steps, batch, mu, seed,
                               meanfield=param == "meanfield", lr_in=lr_in, lr_out=lr_out)
            good, rel = compare(f"linear no bias {param:9s} {opt:8s} batch {batch:2d}", ours, ref, steps, 1e-12)
            worst, cases = max(worst, rel), cases + 1
            if not good:
                print(f"torch_reference: {cases - 1} passed, 1 failed")
                return 1
        # issue 13: the study's map net (width 16, depth 2, d_out 1, no bias,
        # W ~ N(0, 1), mean field), lr_in != lr_out
        m, nm, steps_mf = 16, 272, 60
        Xm, Ym = rs.randn(nm, m), rs.randn(nm, 1)
        Wm = [rs.randn(m, m), rs.randn(1, m)]
        with h5py.File(os.path.join(tmp, "data_mf.h5"), "w") as f:
            f["X"], f["y"] = Xm, Ym
        with h5py.File(os.path.join(tmp, "w0_mf.h5"), "w") as f:
            f["W1"], f["W2"] = Wm[0], Wm[1]
        # and its ReLU variant, sqrt(2) relu(z) (dynsweep: model.gain of a bias-free ReLU net)
        for act, lr_in, lr_out in (("tanh", 0.5, 3.0), ("tanh", 4.0, 0.7), ("relu", 0.5, 3.0),
                                   ("relu", 2.0, 0.7)):
            model = (f"{{type: {act}, gain: {GAIN!r}, param: meanfield, width: {m}, depth: 2, bias: false, "
                     f"init: file, init_file: {tmp}/w0_mf.h5}}")
            ours = dynsweep_losses(exe, tmp, f"mf-{act}-{lr_in}-{lr_out}", seed, steps_mf, model,
                                   f"{{kind: hdf5, path: {tmp}/data_mf.h5, n_train: {nm}, n_test: 0, test_fraction: 0}}",
                                   f"{{type: gd, lr: 1.0, lr_in: {lr_in}, lr_out: {lr_out}}}")
            ref = torch_losses(act, Wm, [None, None], Xm, Ym, "gd", 1.0, steps_mf, 0, 0.0, seed,
                               meanfield=True, lr_in=lr_in, lr_out=lr_out,
                               relu_gain=GAIN if act == "relu" else None)
            good, rel = compare(f"{act} meanfield gain {GAIN:.4f} lr_in {lr_in} lr_out {lr_out}", ours, ref,
                                steps_mf, 1e-12)
            worst, cases = max(worst, rel), cases + 1
            if not good:
                print(f"torch_reference: {cases - 1} passed, 1 failed")
                return 1
    print(f"worst relative difference {worst:.2e}")
    print(f"torch_reference: {cases} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
