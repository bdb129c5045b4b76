#!/usr/bin/python3
"""record.spectra.activations of CNNs (src/diag/cnnact.c, issue 26) against
PyTorch float64, for every layer list and named net of tests/test_cnn.c
(pooling, residual blocks with identity and 1x1 conv shortcuts, hidden
dense + dropout (off), cnn5, myrtle5, tf_mnist, wrn-10-1, the DenseNet-DAGs).

`test_cnn --dump-act FILE K` writes list K's layers, initial weights, 9
images, and ds_diag_cnn_activations' output (one rank): per ReLU of the net
-- each relu layer, a resblock's relu(x) and relu(conv1), a DAG's depths in
order -- the top-6 singular values of its output as a 9 x C H W matrix
(NaN past min(9, C H W)) and ||relu(Z) - Z||_F^2 / ||Z||_F^2, Z its input.
PyTorch rebuilds the net (cnn_layers_torch.forward, with a ReLU that
records every (Z, relu(Z)) in the same order), and must agree: singular
values to 1e-12 relative to the largest (a dead unit's 0 included: the SVD
of the map, not of its Gram matrix), ratios to 1e-12 relative; the NaN
pattern exactly.

Usage: cnn_act_torch.py TEST_CNN_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    from cnn_torch import replay_all
    from cnn_layers_torch import read_dump, plan, unpack, dag_masks, forward, NAMES
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)

TOL = 1e-12


def relus(cfg, layers, params, X):
    """[(layer, part, Z, relu(Z))] of every ReLU in forward order (dropout off):
    cnn_layers_torch.forward with a ReLU that records."""
    rec = []

    def relu(l, part, z):
        a = torch.relu(z)
        rec.append((l, part, z.reshape(z.shape[0], -1), a.reshape(a.shape[0], -1)))
        return a

    forward(cfg, layers, params, X, None, relu)
    return rec


def check(binary, k, tmp):
    path = os.path.join(tmp, f"act{k}.bin")
    subprocess.run([binary, "--dump-act", path, str(k)], check=True)
    cfg, layers, d = read_dump(path)
    shapes = plan(cfg, layers)
    n = cfg["n"]
    P = sum(int(np.prod(s)) for _, s, _ in shapes)
    din = cfg["c0"] * cfg["h0"] * cfg["w0"]
    theta0 = d[:P]
    X = torch.tensor(d[P:P + din * n].reshape(n, cfg["c0"], cfg["h0"], cfg["w0"]).copy())
    o = P + din * n
    topk, R = int(d[o]), int(d[o + 1])
    meta = d[o + 2:o + 2 + 3 * R].reshape(R, 3).astype(int)
    out = d[o + 2 + 3 * R:].reshape(R, topk + 1)
    params = unpack(theta0, shapes)
    dag_masks(layers, params)
    with torch.no_grad():
        rec = relus(cfg, layers, params, X)
    ok = len(rec) == R and R > 0
    esv = erat = 0.0
    for j, (l, part, Z, A) in enumerate(rec if ok else []):
        s = torch.linalg.svdvals(A).numpy()
        want = np.full(topk, np.nan)
        want[:min(topk, len(s))] = s[:topk]
        ratio = (((A - Z) ** 2).sum() / (Z ** 2).sum()).item()
        got = out[j]
        ok = ok and tuple(meta[j]) == (l, part, A.shape[1])
        ok = ok and np.array_equal(np.isnan(got[:topk]), np.isnan(want))
        m = ~np.isnan(want)
        if m.any():
            esv = max(esv, np.max(np.abs(got[:topk][m] - want[m])) / want[0])
        erat = max(erat, abs(got[topk] - ratio) / abs(ratio))
        ok = ok and s[0] > 0 and ratio > 0  # a dead or all-positive map would test little
    ok = ok and esv <= TOL and erat <= TOL
    net = " ".join(NAMES[L["kind"]] for L in layers[:-1])
    dims = ",".join(str(int(x)) for x in meta[:, 2])
    print(f"list {k}: [{net}] {R} ReLUs (d = {dims}, n = {n}): max rel err singular values "
          f"{esv:.2e}, ratios {erat:.2e}" + ("" if ok else "  FAIL"))
    return ok


def main():
    return replay_all("cnn_act_torch", __doc__, "--count-layers", check)


if __name__ == "__main__":
    sys.exit(main())
