#!/usr/bin/python3
"""cnn_torch_bench.py -- the PyTorch (float64, one thread) peer of
build/dynsweep-bench-cnn (bench/cnn_bench.c, issue 26).

The same cases (cnn<L>-C<C>-<c0>x<h>x<w>-n<n>: L - 1 3x3 'same' stride-1
convs of C channels with bias and ReLU, flatten, a dense readout to 1
output, PyTorch's default parameterisation), the same step (forward, then
the gradient of 1/2 sum (f - y)^2 in every parameter by autograd; the
images' gradient is not formed), the same model FLOP count and the same
clock (process CPU time, best of R repeats of k steps after one warm-up
step). torch.mm float64 at n = 1024 and 2048 is the DGEMM reference of
this side.

  cnn_torch_bench.py [--reps R] [--case NAME]...
"""
import ctypes
import math
import re
import sys
import time

import torch
import torch.nn.functional as Fn

DEFAULTS = ["cnn5-C16-1x28x28-n128", "cnn5-C16-3x32x32-n128", "cnn5-C64-1x28x28-n64",
            "cnn5-C64-3x32x32-n64", "cnn5-C128-1x28x28-n32", "cnn5-C128-3x32x32-n32",
            "cnn2-C256-1x28x28-n128", "cnn2-C64-3x32x32-n128"]


def parse(name):
    m = re.fullmatch(r"cnn(\d+)-C(\d+)-(\d+)x(\d+)x(\d+)-n(\d+)", name)
    if not m:
        sys.exit(f"bad case {name}")
    return tuple(int(v) for v in m.groups())


def step_flops(L, C, c0, h, w, n):
    f, cin, P = 0.0, c0, h * w
    for l in range(L - 1):
        f += 2.0 * n * P * cin * 9 * C * (3 if l else 2)
        cin = C
    return f + 3 * 2.0 * n * P * C


def mm_gflops(n, reps=3):
    a = torch.randn(n, n, dtype=torch.float64)
    b = torch.randn(n, n, dtype=torch.float64)
    c = torch.empty(n, n, dtype=torch.float64)
    best = math.inf
    for _ in range(reps):
        t0 = time.process_time()
        torch.mm(a, b, out=c)
        best = min(best, time.process_time() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def openblas_kernel():
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except OSError:
        return "?"


def run_case(name, reps):
    L, C, c0, h, w, n = parse(name)
    g = torch.Generator().manual_seed(26)
    params, cin = [], c0
    for _ in range(L - 1):
        bound = 1.0 / math.sqrt(cin * 9)
        params += [(torch.rand(C, cin, 3, 3, generator=g) * 2 - 1) * bound,
                   (torch.rand(C, generator=g) * 2 - 1) * bound]
        cin = C
    din = C * h * w
    bound = 1.0 / math.sqrt(din)
    params += [(torch.rand(1, din, generator=g) * 2 - 1) * bound,
               (torch.rand(1, generator=g) * 2 - 1) * bound]
    for p in params:
        p.requires_grad_(True)
    X = torch.randn(n, c0, h, w, generator=g)
    Y = torch.tensor([1.0 if i % 2 else -1.0 for i in range(n)]).reshape(n, 1)

    def step():
        a = X
        for l in range(L - 1):
            a = torch.relu(Fn.conv2d(a, params[2 * l], params[2 * l + 1], padding=1))
        f = Fn.linear(a.reshape(n, -1), params[-2], params[-1])
        loss = 0.5 * ((f - Y) ** 2).sum()
        torch.autograd.grad(loss, params)
        return float(loss)

    t0 = time.process_time()
    loss = step()
    t1 = time.process_time() - t0
    k = 1 if t1 > 0.3 else math.ceil(0.3 / max(t1, 1e-6))
    best = math.inf
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(k):
            loss = step()
        best = min(best, (time.process_time() - t0) / k)
    fl = step_flops(L, C, c0, h, w, n)
    print(f"torch {name:24s} step {best * 1e3:9.3f} ms  {fl / best * 1e-9:7.2f} GFLOP/s  "
          f"({fl * 1e-9:.3f} GFLOP/step, k {k}, loss {loss:.6g})", flush=True)


def main(argv):
    reps, cases, i = 3, [], 0
    while i < len(argv):
        if argv[i] == "--reps" and i + 1 < len(argv):
            reps, i = int(argv[i + 1]), i + 2
        elif argv[i] == "--case" and i + 1 < len(argv):
            cases.append(argv[i + 1])
            i += 2
        else:
            sys.exit(__doc__)
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.set_default_dtype(torch.float64)
    print(f"torch {torch.__version__}, OpenBLAS kernel {openblas_kernel()}, threads "
          f"{torch.get_num_threads()}")
    print("torch.mm n=1024 %.2f GFLOP/s  n=2048 %.2f GFLOP/s (start)" % (mm_gflops(1024),
                                                                      mm_gflops(2048)))
    for c in cases or DEFAULTS:
        run_case(c, reps)
    print("torch.mm n=1024 %.2f GFLOP/s  n=2048 %.2f GFLOP/s (end)" % (mm_gflops(1024),
                                                                    mm_gflops(2048)))


if __name__ == "__main__":
    main(sys.argv[1:])
