#!/usr/bin/python3
"""Map tiles (src/nn/tile.c) against PyTorch autograd: the study's net
(width 16, depth 2, n = 272, mean field, no bias, mse mean) with linear, ReLU
and tanh(sqrt(2) z) hidden layers, 9 points (lr_in, lr_out in 0.3..3), 100
full-batch GD steps. `test_tile --dump DIR` writes the data, the initial
weights, the learning rates and the tile's loss series; PyTorch (float64, its
own autograd, one point at a time) trains from the same start; every loss must
agree to 1e-10 relative.

Usage: tile_torch.py TEST_TILE_BINARY   (exit 0 ok, 1 mismatch, 77 skip)
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-torch python3-numpy)")
    sys.exit(77)


def main(binary):
    torch.set_num_threads(1)
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([binary, "--dump", d], check=True)
        for act in ("linear", "relu", "tanh"):
            raw = open(os.path.join(d, act + ".bin"), "rb").read()
            din, m, n, P, T = np.frombuffer(raw[:20], dtype=np.int32)
            v = np.frombuffer(raw[20:], dtype=np.float64)
            o = 0
            def take(k):
                nonlocal o
                o += k
                return v[o - k:o]
            X = torch.tensor(take(din * n).reshape(n, din).T.copy())        # d x n
            Y = torch.tensor(take(n).reshape(1, n).copy())
            W1_0 = torch.tensor(take(m * din).reshape(din, m).T.copy())   # m x d (column-major)
            W2_0 = torch.tensor(take(m).reshape(1, m).copy())
            lr_in, lr_out = take(P), take(P)
            gain = take(1)[0]
            L = take(P * T).reshape(P, T)
            f = {"linear": lambda z: z, "relu": lambda z: gain * torch.relu(z),
                 "tanh": lambda z: torch.tanh(gain * z)}[act]
            worst = 0.0
            for p in range(P):
                W1 = W1_0.clone().requires_grad_(True)
                W2 = W2_0.clone().requires_grad_(True)
                for t in range(T):
                    F = (W2 @ f((W1 @ X) / math.sqrt(din))) / m
                    loss = ((F - Y) ** 2).mean()
                    g1, g2 = torch.autograd.grad(loss, (W1, W2))
                    rel = abs(loss.item() - L[p, t]) / abs(loss.item())
                    worst = max(worst, rel)
                    with torch.no_grad():
                        W1 -= lr_in[p] * g1
                        W2 -= lr_out[p] * g2
            ok = worst <= 1e-10
            bad += not ok
            print(f"{act}: {P} points x {T} steps, largest relative loss difference to torch "
                  f"{worst:.3g} {'ok' if ok else 'FAIL (> 1e-10)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
