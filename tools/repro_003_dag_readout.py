#!/usr/bin/python3
"""repro_003_dag_readout.py WIDTHS NSEEDS -- does masking the readout (seed
003 App. A.1 drops "each weight"; dynsweep's model.net dag masks only the two
hidden layers by default, and the readout too with model.dag_readout_drop,
which was built after this replay with the same semantics) change Fig.
2.2's kernel change? The DAG of
sweeps/repro/003_dag_kernel.yaml (16 features, 10 points, two hidden layers
of m ReLU units, each edge kept w.p. 1/2, each neuron scaled by 1/sqrt(kept
in-degree), W ~ N(0, 1), no biases, GD on (1/n) sum (f - y)^2 at 0.5 n /
lambda_max(K_0), 1000 steps, NTK every 20) in PyTorch float64 with its own
init (torch.Generator seeds 0 .. NSEEDS-1, not dynsweep's streams), the
readout unmasked and masked (its kept in-degree scaling as the hidden
layers'); prints max_t ||K_t - K_0|| / ||K_0|| in both norms (mean +- sd).
A measurement for docs/repro/003_dag_kernel.md, not a test.
  /usr/bin/python3 tools/repro_003_dag_readout.py 16,128,512 2"""
import os
import sys

import numpy as np
import torch

torch.set_num_threads(1); torch.set_default_dtype(torch.float64)
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sweeps", "repro", "data",
                    "003_dag_fmnist16.csv")
D = np.loadtxt(DATA, delimiter=",", skiprows=1)
X = torch.tensor(D[:, :16]); Y = torch.tensor(D[:, 16]); n, d = X.shape
def run(m, seed, mask_out, steps=1000, every=20):
    g = torch.Generator().manual_seed(seed)
    Ws, Ms, S = [], [], []
    for k in range(2):
        fin = d + k * m
        M = (torch.rand(m, fin, generator=g) >= 0.5).double()
        kept = M.sum(1); s = torch.where(kept > 0, kept.clamp(min=1) ** -0.5, torch.zeros(m))
        Ws.append(torch.randn(m, fin, generator=g)); Ms.append(M); S.append(s)
    T = d + 2 * m
    R = torch.randn(1, T, generator=g)
    MR = (torch.rand(1, T, generator=g) >= 0.5).double() if mask_out else torch.ones(1, T)
    sR = MR.sum() ** -0.5
    def f(ps, x):
        cat = x
        for Wk, Mk, sk in zip(ps[:2], Ms, S):
            cat = torch.cat([cat, torch.relu((sk[:, None] * Mk * Wk) @ cat)])
        return (sR * (MR * ps[2]) @ cat)[0]
    import functorch
    jac = functorch.vmap(functorch.jacrev(f), in_dims=(None, 0))
    def K_of(ps):
        J = jac(ps, X); Jf = torch.cat([j.reshape(n, -1) for j in J], 1); return Jf @ Jf.T
    ps = Ws + [R]
    K0 = K_of(ps); lr = 0.5 * n / torch.linalg.eigvalsh(K0)[-1].item()
    kf = k2 = 0.0
    for t in range(steps + 1):
        if t % every == 0:
            K = K_of(ps); dK = K - K0
            kf = max(kf, (torch.linalg.norm(dK) / torch.linalg.norm(K0)).item())
            k2 = max(k2, (torch.linalg.matrix_norm(dK, 2) / torch.linalg.matrix_norm(K0, 2)).item())
        if t == steps: break
        ps = [p.detach().requires_grad_(True) for p in ps]
        F = torch.stack([f(ps, x) for x in X]); L = ((F - Y) ** 2).mean()
        gr = torch.autograd.grad(L, ps)
        ps = [(p - lr * gi).detach() for p, gi in zip(ps, gr)]
    return kf, k2, L.item()
widths = [int(a) for a in sys.argv[1].split(",")]; seeds = range(int(sys.argv[2]))
for m in widths:
    for mo in (0, 1):
        r = np.array([run(m, s, mo) for s in seeds])
        print("m %4d readout %s: max kc_F %.4g +- %.2g  max kc_2 %.4g +- %.2g  final loss %.2g"
              % (m, "masked  " if mo else "unmasked", r[:, 0].mean(), r[:, 0].std(ddof=1), r[:, 1].mean(),
                 r[:, 1].std(ddof=1), r[:, 2].max()), flush=True)
