#!/usr/bin/env python3
"""torch_ref.py -- the PyTorch (float64, one thread) reference of dynsweep's benchmark.

Run by bench/run.sh; the subcommands can also be used alone:

  torch_ref.py info OUT.json
      torch version and build (torch.__config__.show()), which BLAS the
      process really loaded (from /proc/self/maps) and its OpenBLAS kernel,
      threads, and torch.mm float64 GFLOP/s at n = 1024 and 2048.

  torch_ref.py steps DIR
      For every case in DIR/cases.csv (written by `dynsweep-bench --compare
      DIR`): load the same data and initial weights the C side drew
      (DIR/case_NNN.bin, raw float64: X d_in x n, Y d_out x n, theta =
      W_1[,b_1],W_2,..., all column-major as dynsweep stores them), build the
      equivalent nn.Sequential (nn.Linear, nn.ReLU), train the same k
      full-batch GD steps (torch.optim.SGD, loss c * sum (f - y)^2) timed the
      same way (one warm-up step, then at least 2 repetitions of the k steps
      from the same start until the time budget is spent; process CPU time as
      the clock, wall time kept too) and write DIR/torch.csv with steps/s and
      the losses of the first and the k-th step.

  torch_ref.py sweep SWEEP.yaml OUT.h5 [--procs 2]
      The sweep reference: expands the sweep file's grid the way dynsweep does
      (docs/sweep-spec.md: base options, list and range axes, aliases,
      replicas; kinds teacher / gd / mse only) and trains every point the way
      src/worker/point.c does (steps 0..T, the same record schedule and
      series: loss, test_loss, grad_norm, param_norm, layer_fro, top-k
      singular values per layer; tol and diverge_above stop rules) in a pool of
      --procs worker processes; the parent writes every point's series to one
      HDF5 file with h5py as it arrives (as dynsweep's rank 0 does). Data:
      a numpy linear teacher of the same shapes (not dynsweep's Philox draws,
      so losses differ; the work per point is the same). Prints points/s.

  torch_ref.py tile [--points P] [--steps T] [--repeats R] [--acts tanh,relu,linear]
      The batched peer of map tiles (bench/tile.sh, docs/performance.md "Map
      tiles"): trains a whole tile of P points of the study's net at once the
      way its JAX code vmaps over the grid: per-point weights W_1 (P, 16, 16)
      and W_2 (P, 1, 16), shared X (16 x 272) and Y, mean field, tanh(sqrt 2 z)
      / relu / identity, loss mean (f - y)^2 per point, autograd for the
      gradient (torch.matmul/bmm batched products), per-point learning rates
      for each layer, the loss of every point kept at every step; T steps.
      Prints one line per activation and repeat: seconds, trainings/s and
      microseconds per point-step.

Environment: bench/run.sh sets OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1 and
OPENBLAS_CORETYPE to the kernel dynsweep runs, before Python starts (OpenBLAS
reads them when it loads).
"""
import csv
import ctypes
import json
import math
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:  # bench/run.sh checks before calling us
    torch = None


def setup_torch():
    if torch is None:
        sys.exit("torch_ref.py: python3-torch is not installed (apt-get install python3-torch)")
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.set_default_dtype(torch.float64)


# ---------------------------------------------------------------- info --


def loaded_blas():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1] if len(line.split()) >= 6 else ""
            b = os.path.basename(p)
            if any(s in b for s in ("blas", "lapack", "mkl", "dnnl", "gomp")):
                libs.add(os.path.realpath(p))
    return sorted(libs)


def openblas_kernel():
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        lib.openblas_get_config.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode(), lib.openblas_get_config().decode(), \
            lib.openblas_get_num_threads()
    except OSError:
        return "", "", 0


def mm_gflops(n, reps):
    a = torch.randn(n, n, dtype=torch.float64)
    b = torch.randn(n, n, dtype=torch.float64)
    c = torch.empty(n, n, dtype=torch.float64)
    torch.mm(a, b, out=c)
    best = 1e300
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def cmd_info(out):
    setup_torch()
    kernel, config, threads = openblas_kernel()
    info = {
        "torch_version": torch.__version__,
        "torch_config": torch.__config__.show(),
        "torch_threads": torch.get_num_threads(),
        "blas_libraries_loaded": loaded_blas(),
        "openblas_kernel": kernel,
        "openblas_config": config,
        "openblas_threads": threads,
        "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
        "mm_f64_gflops_1024": mm_gflops(1024, 5),
        "mm_f64_gflops_2048": mm_gflops(2048, 3),
    }
    # torch's CPU float64 mm goes to the BLAS (BLAS_INFO=generic: the system
    # libblas.so.3, which Debian's alternatives point at OpenBLAS); MKL-DNN
    # (oneDNN) has no float64 GEMM path.
    with open(out, "w") as f:
        json.dump(info, f, indent=1)
    print("torch %s, %d thread(s); BLAS loaded: %s; OpenBLAS kernel %s (%d thread(s)); "
          "torch.mm float64: %.1f GFLOP/s (1024), %.1f GFLOP/s (2048)"
          % (info["torch_version"], info["torch_threads"],
             ", ".join(os.path.basename(p) for p in info["blas_libraries_loaded"]),
             kernel, threads, info["mm_f64_gflops_1024"], info["mm_f64_gflops_2048"]))


# --------------------------------------------------------------- steps --


def build_mlp(dims, relu, bias):
    layers = []
    L = len(dims) - 1
    for l in range(1, L + 1):
        layers.append(torch.nn.Linear(dims[l - 1], dims[l], bias=bias))
        if relu and l < L:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def load_theta(model, theta, dims, bias):
    """theta: dynsweep's flat vector (W_l column-major d_l x d_{l-1}, then b_l)."""
    off = 0
    lin = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for l, m in enumerate(lin, start=1):
            dout, din = dims[l], dims[l - 1]
            W = theta[off:off + dout * din].reshape(din, dout).T  # column-major -> (out, in)
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(W)))
            off += dout * din
            if bias:
                m.bias.copy_(torch.from_numpy(theta[off:off + dout]))
                off += dout
    assert off == theta.size


def train_k(model, opt, X, Y, c, k):
    first = last = None
    for s in range(k):
        opt.zero_grad(set_to_none=True)
        loss = c * ((model(X) - Y) ** 2).sum()
        loss.backward()
        opt.step()
        if s == 0:
            first = loss.detach()
        last = loss.detach()
    return first.item(), last.item()


def cmd_steps(d, budget):
    setup_torch()
    with open(os.path.join(d, "cases.csv")) as f:
        cases = list(csv.DictReader(f))
    out = open(os.path.join(d, "torch.csv"), "w", newline="")
    w = csv.writer(out)
    w.writerow(["id", "t_reps", "t_steps_per_s", "t_best_steps_per_s", "t_loss_first",
                "t_loss_last", "t_setup_s", "t_wall_steps_per_s"])
    print("torch side: %d cases" % len(cases))
    print("%3s %-6s %5s %5s %5s %6s %5s %12s %22s %10s" % (
        "id", "net", "depth", "width", "n", "k", "reps", "steps/s", "loss at step k",
        "rel diff"))
    for c in cases:
        t_setup = time.perf_counter()
        L, n = int(c["depth"]), int(c["n"])
        din, dout, width = int(c["d_in"]), int(c["d_out"]), int(c["width"])
        dims = [din] + [width] * (L - 1) + [dout]
        relu, bias = c["net"] == "relu", c["bias"] == "1"
        raw = np.fromfile(os.path.join(d, c["file"]), dtype="<f8")
        nx, ny = din * n, dout * n
        X = torch.from_numpy(raw[:nx].reshape(n, din))      # column-major d x n = (n, d) rows
        Y = torch.from_numpy(raw[nx:nx + ny].reshape(n, dout))
        theta0 = raw[nx + ny:]
        assert theta0.size == int(c["nparams"]), "case file size"
        model = build_mlp(dims, relu, bias)
        coef, lr, k = float(c["c"]), float(c["lr"]), int(c["k"])
        t_setup = time.perf_counter() - t_setup
        # warm-up: one step
        load_theta(model, theta0, dims, bias)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        train_k(model, opt, X, Y, coef, 1)
        reps, total, best, wall = 0, 0.0, 1e300, 0.0
        first = last = None
        while reps < 2 or total < budget:  # as the C side: >= 2 reps, process CPU time
            load_theta(model, theta0, dims, bias)
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            w0, t0 = time.perf_counter(), time.process_time()
            f1, l1 = train_k(model, opt, X, Y, coef, k)
            dt = time.process_time() - t0
            wall += time.perf_counter() - w0
            if reps == 0:
                first, last = f1, l1
            total += dt
            best = min(best, dt)
            reps += 1
        sps = k * reps / total
        cl = float(c["c_loss_last"])
        rel = abs(last - cl) / abs(cl) if cl != 0 else abs(last)
        print("%3s %-6s %5d %5d %5d %6d %5d %12.1f %22.15e %10.2e"
              % (c["id"], c["net"], L, width, n, k, reps, sps, last, rel))
        sys.stdout.flush()
        w.writerow([c["id"], reps, "%.6g" % sps, "%.6g" % (k / best), repr(first), repr(last),
                    "%.4g" % t_setup, "%.6g" % (k * reps / wall)])
        out.flush()
        os.remove(os.path.join(d, c["file"]))  # the big cases are hundreds of MB
    out.close()


# --------------------------------------------------------------- sweep --

ALIASES = {"width": "model.width", "depth": "model.depth", "lr": "optimizer.lr",
           "init_scale": "model.init_scale"}
DEFAULTS = {
    "model.type": "linear", "model.bias": False, "model.width": 16, "model.depth": 2,
    "model.init": "gaussian", "model.init_scale": 1.0,
    "data.kind": "teacher", "data.n_train": 256, "data.n_test": 256, "data.d_in": 16,
    "data.d_out": 4, "data.rank": None, "data.noise": 0.0,
    "loss.type": "mse", "loss.reduction": None,
    "optimizer.type": "gd", "optimizer.lr": 0.01,
    "train.steps": 1000, "train.tol": 0.0, "train.diverge_above": 1e6,
    "record.series": ["loss", "test_loss", "grad_norm", "param_norm", "layer_fro", "layer_sv"],
    "record.every": 10, "record.per_decade": 10, "record.top_k": 5,
}


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def axis_values(spec):
    if isinstance(spec, list):
        return spec
    start, stop, num = float(spec["start"]), float(spec["stop"]), int(spec["num"])
    if num == 1:
        return [start]
    if spec.get("spacing", "linear") == "log":
        a, b = math.log10(start), math.log10(stop)
        vals = [10 ** (a + (b - a) * i / (num - 1)) for i in range(num)]
    else:
        vals = [start + (stop - start) * i / (num - 1) for i in range(num)]
    return [float("%.15g" % v) for v in vals]


def expand(path):
    import yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    base = dict(DEFAULTS)
    for sec in ("model", "data", "loss", "optimizer", "train", "record"):
        if sec in doc:
            base.update(flatten(doc[sec], sec + "."))
    grid = dict(doc.get("grid") or {})
    replicas = int(grid.pop("replicas", 1))
    axes = [(ALIASES.get(k, k), axis_values(v)) for k, v in grid.items()]
    points = []
    combos = [[]]
    for _, vals in axes:
        combos = [c + [v] for c in combos for v in vals]  # last axis fastest
    for ci, combo in enumerate(combos):
        cfg = dict(base)
        for (p, _), v in zip(axes, combo):
            cfg[p] = v
        for r in range(replicas):
            points.append((ci * replicas + r, r, dict(cfg)))
    return doc, points


def record_step(every, per_decade, t, T):
    if t == 0 or t == T:
        return True
    if every > 0 and t % every == 0:
        return True
    if per_decade > 0:
        k = math.floor(math.log10(t) * per_decade)
        for d in (0, 1):
            if int(math.floor(10 ** ((k + d) / per_decade) + 0.5)) == t:
                return True
    return False


def teacher(rng, din, dout, rank, noise, n_train, n_test):
    U, _ = np.linalg.qr(rng.standard_normal((dout, rank)))
    V, _ = np.linalg.qr(rng.standard_normal((din, rank)))
    T = U @ V.T
    def draw(n):
        X = rng.standard_normal((n, din))
        return X, X @ T.T + noise * rng.standard_normal((n, dout))
    return draw(n_train), draw(n_test)


def run_point(arg):
    """One point, the loop of src/worker/point.c. Returns (id, summary, series)."""
    pid, replica, cfg, seed = arg
    t0 = time.perf_counter()
    din, dout = int(cfg["data.d_in"]), int(cfg["data.d_out"])
    width, L = int(cfg["model.width"]), int(cfg["model.depth"])
    rank = cfg["data.rank"] or min(din, dout)
    n, nt = int(cfg["data.n_train"]), int(cfg["data.n_test"])
    rng = np.random.default_rng([seed, replica])  # common random numbers across lr etc.
    (X, Y), (Xt, Yt) = teacher(rng, din, dout, int(rank), float(cfg["data.noise"]), n, nt)
    X, Y, Xt, Yt = (torch.from_numpy(a) for a in (X, Y, Xt, Yt))
    dims = [din] + [width] * (L - 1) + [dout]
    bias = bool(cfg["model.bias"])
    model = build_mlp(dims, cfg["model.type"] == "relu", bias)
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    gen = torch.Generator().manual_seed(seed * 1000 + replica)
    scale = float(cfg["model.init_scale"])
    with torch.no_grad():
        for m in lins:
            m.weight.normal_(0.0, scale / math.sqrt(m.in_features), generator=gen)
            if bias:
                m.bias.zero_()
    red = cfg["loss.reduction"]
    c = {"sum": 1.0, "half_sum": 0.5, "mean": 1.0 / n, "half_mean": 0.5 / n}[red]
    ct = {"sum": 1.0, "half_sum": 0.5, "mean": 1.0 / max(nt, 1), "half_mean": 0.5 / max(nt, 1)}[red]
    opt = torch.optim.SGD(model.parameters(), lr=float(cfg["optimizer.lr"]))
    T, tol, div = int(cfg["train.steps"]), float(cfg["train.tol"]), float(cfg["train.diverge_above"])
    every, per_dec, topk = int(cfg["record.every"]), int(cfg["record.per_decade"]), int(cfg["record.top_k"])
    series = set(cfg["record.series"])
    rec = {}

    def put(name, t, vals):
        rec.setdefault(name, ([], []))
        rec[name][0].append(t)
        rec[name][1].append(vals)

    status, loss_v, min_loss, test_loss = "done", float("nan"), float("inf"), float("nan")
    t = 0
    while True:
        opt.zero_grad(set_to_none=True)
        loss = c * ((model(X) - Y) ** 2).sum()
        loss.backward()
        loss_v = loss.item()
        diverged = not math.isfinite(loss_v) or loss_v > div
        last = diverged or t == T or (tol > 0 and loss_v < tol)
        if math.isfinite(loss_v):
            min_loss = min(min_loss, loss_v)
        if not diverged and (last or record_step(every, per_dec, t, T)):
            with torch.no_grad():
                if "loss" in series:
                    put("loss", t, [loss_v])
                if "test_loss" in series and nt > 0:
                    test_loss = (ct * ((model(Xt) - Yt) ** 2).sum()).item()
                    put("test_loss", t, [test_loss])
                if "grad_norm" in series:
                    put("grad_norm", t, [math.sqrt(sum(float((p.grad ** 2).sum())
                                                       for p in model.parameters()))])
                if "param_norm" in series:
                    put("param_norm", t, [math.sqrt(sum(float((p ** 2).sum())
                                                        for p in model.parameters()))])
                if "layer_fro" in series:
                    put("layer_fro", t, [float(torch.linalg.norm(m.weight)) for m in lins])
                if "layer_sv" in series:
                    for l, m in enumerate(lins, start=1):
                        sv = torch.linalg.svdvals(m.weight)[:topk].tolist()
                        sv += [0.0] * (topk - len(sv))
                        put("sv/W%d" % l, t, sv)
        elif diverged and "loss" in series:
            put("loss", t, [loss_v])
        if diverged:
            status = "diverged"
        if last:
            break
        opt.step()
        t += 1
    out = {k: (np.asarray(s, dtype=np.int64), np.asarray(v, dtype=np.float64))
           for k, (s, v) in rec.items()}
    summ = (pid, status, t, loss_v, min_loss, test_loss, time.perf_counter() - t0)
    return summ, out


def _pool_init():
    # forked from the parent, which already called setup_torch(): torch aborts
    # (not an exception) on a second set_num_interop_threads, so only this
    torch.set_num_threads(1)


def cmd_sweep(path, out, procs):
    import h5py
    import multiprocessing as mp
    setup_torch()
    t0 = time.perf_counter()
    doc, points = expand(path)
    seed = int(doc.get("seed", 0))
    for _, _, cfg in points:
        for k, v in (("data.kind", "teacher"), ("optimizer.type", "gd"), ("loss.type", "mse"),
                     ("model.init", "gaussian")):
            if cfg.get(k, v) != v:
                sys.exit("torch_ref.py sweep: only %s=%s is implemented" % (k, v))
    ctx = mp.get_context("fork")
    h5 = h5py.File(out, "w")
    pts = h5.create_group("points")
    summary = []
    steps_total = 0
    with ctx.Pool(procs, initializer=_pool_init) as pool:
        args = [(pid, r, cfg, seed) for pid, r, cfg in points]
        # longest first, as dynsweep's scheduler does (cost ~ steps * n * sum d_l d_{l-1})
        def cost(a):
            cfg = a[2]
            w, L = int(cfg["model.width"]), int(cfg["model.depth"])
            dims = [int(cfg["data.d_in"])] + [w] * (L - 1) + [int(cfg["data.d_out"])]
            return -int(cfg["train.steps"]) * int(cfg["data.n_train"]) * sum(
                dims[i] * dims[i + 1] for i in range(L))
        args.sort(key=cost)
        for summ, series in pool.imap_unordered(run_point, args, chunksize=1):
            g = pts.create_group("%06d" % summ[0])
            for name, (s, v) in series.items():
                sg = g.create_group(name)
                sg.create_dataset("step", data=s)
                sg.create_dataset("value", data=v)
            h5.flush()
            summary.append(summ)
            steps_total += summ[2]
    dt = np.dtype([("id", "<i8"), ("status", "S16"), ("steps", "<i8"), ("final_loss", "<f8"),
                   ("min_loss", "<f8"), ("final_test_loss", "<f8"), ("wall_s", "<f8")])
    summary.sort()
    h5.create_dataset("summary", data=np.array(summary, dtype=dt))
    wall = time.perf_counter() - t0
    h5.attrs["wall_s"] = wall
    h5.attrs["procs"] = procs
    h5.close()
    ndiv = sum(1 for s in summary if s[1] == "diverged")
    print("torch sweep %s: %d points (%d diverged), %d steps in %.2f s with %d processes: "
          "%.2f points/s" % (os.path.basename(path), len(points), ndiv, steps_total, wall, procs,
                             len(points) / wall))
    with open(out + ".json", "w") as f:
        json.dump({"points": len(points), "diverged": ndiv, "steps": steps_total,
                   "wall_s": wall, "procs": procs}, f)

# ---------------------------------------------------------------- tile --


def tile_train(act, P, T, X, Y, W1_0, W2_0, lr_in, lr_out):
    """T full-batch GD steps of P points at once; returns the (T, P) losses."""
    m, d = W1_0.shape
    n = X.shape[1]
    a1, a2 = 1.0 / math.sqrt(d), 1.0 / m  # mean field: W a / sqrt(fan_in), output / fan_in
    W1 = W1_0.expand(P, m, d).clone().requires_grad_(True)
    W2 = W2_0.expand(P, 1, m).clone().requires_grad_(True)
    f = {"tanh": lambda z: torch.tanh(math.sqrt(2.0) * z), "relu": torch.relu,
         "linear": lambda z: z}[act]
    losses = torch.empty(T, P)
    li, lo = lr_in.view(P, 1, 1), lr_out.view(P, 1, 1)
    for t in range(T):
        Z = a1 * torch.matmul(W1, X)                    # (P, m, n)
        F = a2 * torch.bmm(W2, f(Z))                    # (P, 1, n)
        L = ((F - Y) ** 2).mean(dim=(1, 2))             # (P,)
        g1, g2 = torch.autograd.grad(L.sum(), (W1, W2))
        with torch.no_grad():
            losses[t] = L
            W1 -= li * g1
            W2 -= lo * g2
    return losses


def cmd_tile(argv):
    setup_torch()
    def opt(name, default):
        return argv[argv.index(name) + 1] if name in argv else default
    P, T, R = int(opt("--points", "256")), int(opt("--steps", "1000")), int(opt("--repeats", "3"))
    acts = opt("--acts", "linear,relu,tanh").split(",")
    g = torch.Generator().manual_seed(13)
    d, m, n = 16, 16, 272
    X = torch.randn(d, n, generator=g)
    Y = torch.randn(1, n, generator=g)
    W1_0 = torch.randn(m, d, generator=g)
    W2_0 = torch.randn(1, m, generator=g)
    k = torch.arange(P, dtype=torch.float64)
    lr_in = 0.02 * 2.0 ** (torch.remainder(k, 16) / 16)     # as bench/tile_bench.c
    lr_out = 0.02 * 2.0 ** (torch.remainder(torch.div(k, 16, rounding_mode="floor"), 16) / 16)
    print("torch %s, %d thread(s), float64, tile of %d points, %d steps"
          % (torch.__version__, torch.get_num_threads(), P, T))
    for act in acts:
        for r in range(R):
            c0, t0 = time.process_time(), time.perf_counter()
            L = tile_train(act, P, T, X, Y, W1_0, W2_0, lr_in, lr_out)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            bad = int((~torch.isfinite(L)).sum())
            print("torch-tile %-6s P %d steps %d repeat %d: %.3f s cpu (%.3f s wall), %.2f "
                  "trainings/s, %.2f us/point-step%s"
                  % (act, P, T, r, cpu, wall, P / cpu, 1e6 * cpu / (P * T),
                     ", %d non-finite losses" % bad if bad else ""))
            sys.stdout.flush()


def main(argv):
    if len(argv) >= 3 and argv[1] == "info":
        cmd_info(argv[2])
    elif len(argv) >= 3 and argv[1] == "steps":
        budget = float(os.environ.get("BENCH_BUDGET", "0.3"))
        cmd_steps(argv[2], budget)
    elif len(argv) >= 2 and argv[1] == "tile":
        cmd_tile(argv[2:])
    elif len(argv) >= 4 and argv[1] == "sweep":
        procs = int(argv[argv.index("--procs") + 1]) if "--procs" in argv else 2
        cmd_sweep(argv[2], argv[3], procs)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
