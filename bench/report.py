#!/usr/bin/env python3
"""report.py -- the table and the CSV of bench/run.sh (issue 7's figures).

  report.py WORKDIR --csv FILE [--root REPO] [--quick]

Reads what bench/run.sh left in WORKDIR (steps/env.csv, steps/cases.csv,
steps/torch.csv, torch_info.json, the stores NAME.h5 and NAME.torch.h5,
NAME.proc.json from procwatch.py, NAME.probes from perf) and prints one
table per section; the CSV holds the same figures, one per row:

  section,metric,case,dynsweep,torch,ratio,target,met,unit

`met` is yes / no / void (the comparison does not count: the losses differ)
or empty when the issue sets no target for that row. Needs numpy and h5py
(python3-numpy, python3-h5py: dynsweep's own dependencies), not torch.
"""
import csv
import json
import os
import sys

import numpy as np

try:
    import h5py
except ImportError:
    h5py = None

ROWS = []


def row(section, metric, case, ds, torch=None, ratio=None, target="", met="", unit=""):
    ROWS.append([section, metric, case, ds, torch, ratio, target, met, unit])


def fmt(v, nd=4):
    if v is None or v == "":
        return ""
    if isinstance(v, str):
        return v
    if v != v:
        return "nan"
    return "%.*g" % (nd, v)


def read_csv(p):
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def load_json(p):
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


# ---- 1. training steps ---------------------------------------------------------


def step_target(width, n):
    """(min ratio, min fraction of DGEMM) from issue 7, None where it sets none."""
    if width <= 16:
        return (20.0, None) if n <= 256 else (None, None)
    if width == 64:
        return (2.0, None) if n <= 256 else (1.3, None) if n == 1024 else (None, None)
    if width == 256:
        return (1.2, 0.75)
    if width >= 1024:
        return (1.0, 0.85)
    return (None, None)


def steps_section(w):
    env = read_csv(os.path.join(w, "steps", "env.csv"))
    cases = read_csv(os.path.join(w, "steps", "cases.csv"))
    torch = {r["id"]: r for r in read_csv(os.path.join(w, "steps", "torch.csv"))}
    info = load_json(os.path.join(w, "torch_info.json"))
    if not env:
        print("(no training-step figures)")
        return
    e = env[0]
    ref = float(e["dgemm_ref_gflops"])
    print("BLAS: OpenBLAS kernel %s (best for this CPU: %s), %s thread(s)"
          % (e["kernel"], e["best_kernel"] or "-", e["threads"]))
    print("DGEMM (C, cblas_dgemm): %.1f GFLOP/s n=1024, %.1f GFLOP/s n=2048 -> reference %.1f"
          % (float(e["dgemm1024_gflops"]), float(e["dgemm2048_gflops"]), ref))
    row("env", "openblas_kernel", "dynsweep", e["kernel"])
    row("env", "dgemm_gflops", "n=1024", float(e["dgemm1024_gflops"]), unit="GFLOP/s")
    row("env", "dgemm_gflops", "n=2048", float(e["dgemm2048_gflops"]), unit="GFLOP/s")
    if info:
        libs = ", ".join(os.path.basename(p) for p in info["blas_libraries_loaded"])
        print("PyTorch %s, %d thread(s), float64; BLAS loaded in the process: %s;"
              % (info["torch_version"], info["torch_threads"], libs))
        print("  its OpenBLAS kernel %s (%d thread(s)); torch.mm float64 %.1f GFLOP/s n=1024, "
              "%.1f n=2048; MKL-DNN (oneDNN) present: %s (no float64 GEMM path)"
              % (info["openblas_kernel"], info["openblas_threads"], info["mm_f64_gflops_1024"],
                 info["mm_f64_gflops_2048"], info["mkldnn_available"]))
        import re
        bi = re.findall(r"(?:BLAS_INFO|LAPACK_INFO|USE_MKLDNN|USE_OPENMP)=\w+", info["torch_config"])
        print("  torch.__config__.show(): %s" % ", ".join(bi))
        row("env", "openblas_kernel", "torch", info["openblas_kernel"])
        row("env", "torch_mm_f64_gflops", "n=1024", None, info["mm_f64_gflops_1024"], unit="GFLOP/s")
        row("env", "torch_mm_f64_gflops", "n=2048", None, info["mm_f64_gflops_2048"], unit="GFLOP/s")
        if info["openblas_kernel"] != e["kernel"]:
            print("  *** WARNING: the two sides ran different OpenBLAS kernels")
    else:
        why = "python3-torch is not installed"
        ta = os.path.join(w, "torch_available")
        if os.path.exists(ta) and open(ta).read().strip() not in ("", "available"):
            why = open(ta).read().strip()
        print("PyTorch reference: MISSING (%s) -- dynsweep side only" % why)
    print()
    print("training step = loss + gradient + GD step; d_in = d_out = width; linear nets without "
          "bias, ReLU nets with bias; k steps from the same data and weights on both sides")
    hdr = ("%-6s %5s %5s %5s %6s %11s %11s %7s %7s %6s %6s %9s %-14s"
           % ("net", "depth", "width", "n", "k", "C steps/s", "torch st/s", "ratio", "target",
              "C%DG", "T%DG", "loss rdiff", "met"))
    print(hdr)
    print("-" * len(hdr))
    counts = {"yes": 0, "no": 0, "void": 0}
    for c in cases:
        width, n, L = int(c["width"]), int(c["n"]), int(c["depth"])
        cs = float(c["c_steps_per_s"])
        frac = float(c["c_frac_dgemm"])
        t = torch.get(c["id"])
        ts = float(t["t_steps_per_s"]) if t else None
        ratio = cs / ts if ts else None
        tfrac = float(c["flops_step"]) * float(t["t_best_steps_per_s"]) * 1e-9 / ref if t else None
        rdiff = None
        if t:
            cl, tl = float(c["c_loss_last"]), float(t["t_loss_last"])
            rdiff = abs(cl - tl) / abs(cl) if cl else abs(tl)
        rt, ft = step_target(width, n)
        tgt = []
        if rt:
            tgt.append(">=%gx" % rt)
        if ft:
            tgt.append(">=%d%%DG" % round(100 * ft))
        met = ""
        why = []
        if rdiff is not None and not rdiff <= 1e-10:
            met = "void"
        elif rt or ft:
            ok = True
            if rt:
                if ratio is None:
                    ok = None
                elif ratio < rt:
                    ok = False
                    why.append("ratio")
            if ft and frac < ft:
                ok = False
                why.append("%DG")
            met = "" if ok is None else "yes" if ok else "no"
        if met in counts:
            counts[met] += 1
        case = "%s d%d w%d n%d" % (c["net"], L, width, n)
        print("%-6s %5d %5d %5d %6s %11.1f %11s %7s %7s %5.0f%% %6s %9s %-14s"
              % (c["net"], L, width, n, c["k"], cs, fmt(ts, 5) if ts else "-",
                 "%.2fx" % ratio if ratio else "-", "/".join(tgt) or "-", 100 * frac,
                 "%.0f%%" % (100 * tfrac) if tfrac else "-",
                 "%.1e" % rdiff if rdiff is not None else "-",
                 met + (" (" + ",".join(why) + ")" if why else "")))
        row("steps", "steps_per_s", case, cs, ts, ratio, ">=%g" % rt if rt else "", met, "steps/s")
        row("steps", "frac_dgemm", case, frac, tfrac, None, ">=%g" % ft if ft else "",
            ("yes" if frac >= ft else "no") if ft else "", "fraction")
        row("steps", "gflops", case, float(c["c_gflops"]), tfrac * ref if tfrac else None,
            None, "", "", "GFLOP/s")
        if rdiff is not None:
            row("steps", "loss_rel_diff_after_k", case, float(c["c_loss_last"]),
                float(t["t_loss_last"]), rdiff, "<=1e-10", "yes" if rdiff <= 1e-10 else "no", "")
    print("step targets: %d met, %d missed, %d void (losses differ)"
          % (counts["yes"], counts["no"], counts["void"]))


# ---- stores -------------------------------------------------------------------------


def store_stats(path):
    """summary, attrs, payload bytes (series data: steps + values) and file bytes of a
    dynsweep store (format 1-2: the datasets under /points; 3: the records of
    /series/index)."""
    f = h5py.File(path, "r")
    s = f["summary"][:]
    attrs = {k: f.attrs[k] for k in f.attrs}
    payload = [0]
    nds = [0]

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            payload[0] += obj.size * obj.dtype.itemsize
            nds[0] += 1
    if "points" in f:
        f["points"].visititems(visit)
    if "series" in f and "index" in f["series"]:  # format 3: sweep-wide tables
        x = f["series/index"][...]
        x = x[(x["point"] >= 0) & (x["kind"] >= 0)]
        payload[0] = int((x["n"] * 8 * (1 + x["ncols"])).sum())  # steps + values
        nds[0] = 2 * len(x)  # the step and value arrays of each series
    f.close()
    return s, attrs, payload[0], nds[0], os.path.getsize(path)


def probe_time(path):
    """Seconds rank 0 spent inside ds_store_* calls: uprobe entry (dsbench:e_*) and
    return (dsbench:r_*) events per thread; only outermost calls count (a publish
    inside ds_store_finish is not counted twice). Returns (seconds, calls,
    {function: seconds})."""
    if not os.path.exists(path):
        return None, 0, {}
    depth, start, total, n, per = {}, {}, 0.0, 0, {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 3:
                continue
            tid, t, ev = p[0], float(p[1].rstrip(":")), p[2].rstrip(":")
            if ev.startswith("dsbench:e_"):
                if depth.get(tid, 0) == 0:
                    start[tid] = (t, ev[len("dsbench:e_"):])
                depth[tid] = depth.get(tid, 0) + 1
            elif ev.startswith("dsbench:r_") and depth.get(tid, 0) > 0:
                depth[tid] -= 1
                if depth[tid] == 0:
                    t0, fn = start[tid]
                    total += t - t0
                    per[fn] = per.get(fn, 0.0) + t - t0
                    n += 1
    return (total if n else None), n, per


def store_log(path):
    """dynsweep's own figures: 'store: N publishes, X s (...); journal ..., Y s writing+fsync'."""
    import re
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        m = re.search(r"store: (\d+) publishes, ([0-9.]+) s .*journal (\d+) records, "
                      r"([0-9.]+) MB, ([0-9.]+) s writing", line)
        if m:
            return {"publishes": int(m.group(1)), "publish_s": float(m.group(2)),
                    "journal_records": int(m.group(3)), "journal_s": float(m.group(5))}
    return None


def sweep_section(w, quick):
    print()
    print("whole sweeps: dynsweep `mpirun -n 3 dynsweep run` (rank 0 schedules and writes, 2 "
          "workers) vs bench/torch_ref.py sweep (2 processes + a writing parent)")
    hdr = ("%-13s %6s %9s %9s %9s %9s %9s %8s %7s %5s %6s" % (
        "sweep", "points", "ds wall", "ds pts/s", "ds steps", "T wall", "T pts/s", "T steps",
        "ratio", "tgt", "met"))
    print(hdr)
    print("-" * len(hdr))
    for name in ("small_points", "demo"):
        st = os.path.join(w, name + ".h5")
        if not os.path.exists(st):
            continue
        s, attrs, _, _, _ = store_stats(st)
        wall = run_wall(w, name, attrs)
        pw = load_json(os.path.join(w, name + ".proc.json"))
        ext = pw["wall_s"] if pw else None
        npts = len(s)
        tj = load_json(os.path.join(w, name + ".torch.h5.json"))
        text = None
        if os.path.exists(os.path.join(w, name + ".torch.wall")):
            text = float(open(os.path.join(w, name + ".torch.wall")).read())
        dps = npts / wall
        tps = tj["points"] / tj["wall_s"] if tj else None
        ratio = dps / tps if tps else None
        ratio_ext = (npts / ext) / (tj["points"] / text) if (tj and ext and text) else None
        tgt = 3.0 if name == "small_points" else None
        met = ("yes" if ratio >= tgt else "no") if (tgt and ratio) else ""
        print("%-13s %6d %8.2fs %9.1f %9d %9s %9s %8s %7s %5s %6s" % (
            name, npts, wall, dps, int(s["steps"].sum()),
            "%.2fs" % tj["wall_s"] if tj else "-", fmt(tps) if tps else "-",
            tj["steps"] if tj else "-", "%.1fx" % ratio if ratio else "-",
            ">=%gx" % tgt if tgt else "-", met))
        row("sweep", "points_per_s", name, dps, tps, ratio, ">=%g" % tgt if tgt else "", met,
            "points/s (in-program wall)")
        if ratio_ext:
            row("sweep", "points_per_s_with_startup", name, npts / ext, tj["points"] / text,
                ratio_ext, "", "", "points/s (mpirun / python3 start to exit)")
        row("sweep", "wall_s", name, wall, tj["wall_s"] if tj else None, None, "", "", "s")
        if ext:
            row("sweep", "wall_s_with_startup", name, ext, text, None, "", "", "s")
        row("sweep", "total_steps", name, float(s["steps"].sum()), tj["steps"] if tj else None,
            None, "", "", "steps")
        util = s["wall_s"].sum() / (wall * max(int(attrs["nranks"]) - 1, 1))
        row("sweep", "worker_busy_fraction", name, util, None, None, "", "", "fraction")
        print("%-13s   start to exit: dynsweep (mpirun) %.2fs, torch (python3) %s -> ratio %s; "
              "dynsweep workers busy %.0f%% of the wall time" % (
                  "", ext or float("nan"), "%.2fs" % text if text else "-",
                  "%.1fx" % ratio_ext if ratio_ext else "-", 100 * util))


def run_wall(w, name, attrs):
    """The run's wall time: the store's wall_s (dynsweep measures it before
    ds_store_finish) plus the time of ds_store_finish and ds_store_close from
    the uprobes, which publish the journal (for a store that defers its HDF5
    work, the largest part); without probes, the wall_s attribute."""
    _, _, per = probe_time(os.path.join(w, name + ".probes"))
    return float(attrs["wall_s"]) + per.get("ds_store_finish", 0.0) + per.get("ds_store_close", 0.0)


def sched_store_section(w):
    print()
    print("scheduler and store (every dynsweep run of this benchmark). wall = the store's wall_s "
          "+ ds_store_finish/close (the final publish,\n which wall_s left out before store format 3 "
          "and now includes: counted twice, a few tens of ms); "
          "rank 0 CPU = rank0_cpu_s / wall; write s = wall time of rank 0's ds_store_* calls\n"
          "(perf uprobes, outermost calls; * = dynsweep's own publish_s + journal_s)")
    hdr = ("%-13s %6s %8s %10s %9s %10s %11s %7s %9s %8s" % (
        "run", "points", "wall", "points/s", "rank0 CPU", "write s", "write share", "files",
        "payload", "disk/pl"))
    print(hdr)
    print("-" * len(hdr))
    for name in ("empty", "small_points", "demo", "mem"):
        st = os.path.join(w, name + ".h5")
        if not os.path.exists(st):
            continue
        s, attrs, payload, nds, size = store_stats(st)
        wall, cpu = run_wall(w, name, attrs), float(attrs["rank0_cpu_s"])
        wt, nw, per = probe_time(os.path.join(w, name + ".probes"))
        own = store_log(os.path.join(w, name + ".log"))
        own_s = own["publish_s"] + own["journal_s"] if own else None
        share = wt / wall if wt is not None else own_s / wall if own_s is not None else None
        pps = len(s) / wall
        print("%-13s %6d %7.2fs %10.1f %8.1f%% %10s %11s %7s %9s %7.2fx" % (
            name, len(s), wall, pps, 100 * cpu / wall,
            "%.3f" % wt if wt is not None else "%.3f*" % own_s if own_s is not None else "-",
            "%.1f%%" % (100 * share) if share is not None else "<=%.1f%%" % (100 * cpu / wall),
            fmt(size / 1e6, 3) + "MB", fmt(payload / 1e6, 3) + "MB", size / max(payload, 1)))
        if name == "empty":
            row("sched", "empty_points_per_s", name, pps, None, None, ">=2000",
                "yes" if pps >= 2000 else "no", "points/s")
            st_s = wt if wt is not None else own_s
            if st_s is not None and wall > st_s:
                xs = len(s) / (wall - st_s)
                row("sched", "empty_points_per_s_without_store", name, xs, None, None, "", "",
                    "points/s (wall minus the time in ds_store_* calls)")
                print("%-13s   without the time in the store: %.0f points/s" % ("", xs))
        busy = name in ("small_points", "demo")
        row("sched", "rank0_cpu_share", name, cpu / wall, None, None, "<0.05" if busy else "",
            ("yes" if cpu / wall < 0.05 else "no") if busy else "", "fraction of a core")
        if wt is not None:
            row("store", "write_share_of_wall", name, wt / wall, None, None, "<0.02",
                "yes" if wt / wall < 0.02 else "no", "fraction (perf uprobes on ds_store_* calls)")
            row("store", "store_calls", name, nw, None, None, "", "", "calls")
            for fn, sec in sorted(per.items()):
                row("store", "seconds_in_" + fn, name, sec, None, None, "", "", "s")
        if own_s is not None:
            row("store", "write_share_of_wall_dynsweep_log", name, own_s / wall, None, None,
                "<0.02", "yes" if own_s / wall < 0.02 else "no",
                "fraction (dynsweep's publish_s + journal_s)")
            row("store", "publishes", name, own["publishes"], None, None, "", "", "publishes")
        if wt is None and own_s is None:
            row("store", "write_share_upper_bound", name, cpu / wall, None, None, "<0.02",
                "yes" if cpu / wall < 0.02 else "", "fraction (rank 0 CPU share)")
        if payload:
            row("store", "disk_over_payload", name, size / payload, None, None, "<=1.3",
                "yes" if size / payload <= 1.3 else "no", "ratio")
        row("store", "file_bytes", name, size, None, None, "", "", "bytes")
        row("store", "payload_bytes", name, payload, None, None, "", "", "bytes")
        row("store", "series_datasets", name, nds, None, None, "", "", "datasets")
        tst = os.path.join(w, name + ".torch.h5")
        if os.path.exists(tst):
            row("store", "file_bytes_torch_h5py", name, None, os.path.getsize(tst), None, "",
                "", "bytes")


# ---- memory ------------------------------------------------------------------------


def mem_need(cfg):
    """Bytes a point needs: theta, grad, data, training (and test) workspace, F buffer."""
    m, d = cfg.get("model", {}), cfg.get("data", {})
    L, width = int(m.get("depth", 2)), int(m.get("width", 16))
    din, dout = int(d.get("d_in", 16)), int(d.get("d_out", 4))
    n, nt = int(d.get("n_train", 256)), int(d.get("n_test", 256))
    relu, bias = m.get("type", "linear") == "relu", bool(m.get("bias", False))
    dims = [din] + [width] * (L - 1) + [dout]
    P = sum(dims[l] * dims[l - 1] + (dims[l] if bias else 0) for l in range(1, L + 1))

    def work(k):
        if k == 0:
            return 0
        z = sum(dims[l] * k for l in range(1, L + 1))
        a = sum(dims[l] * k for l in range(1, L)) if relu else 0
        return (z + a + dims[L] * k + 2 * max(dims) * k) * 8
    parts = {"weights+grad": 2 * P * 8, "data": (din + dout) * (n + nt) * 8,
             "workspace": work(n) + work(nt), "F buffer": dout * max(n, nt) * 8}
    return sum(parts.values()), parts


def mem_section(w, root):
    pm = load_json(os.path.join(w, "mem.proc.json"))
    pe = load_json(os.path.join(w, "empty.proc.json"))
    if not pm:
        return
    import yaml
    with open(os.path.join(root, "bench", "sweeps", "mem_point.yaml")) as f:
        cfg = yaml.safe_load(f)
    need, parts = mem_need(cfg)
    base = max((r["vmhwm_kb"] for r in pe["ranks"] if r["rank"] != 0), default=0) * 1024 if pe else 0
    print()
    print("memory per worker (VmHWM sampled from /proc every 10 ms) on bench/sweeps/mem_point.yaml "
          "(linear, depth 4, width 1024, n 2048)")
    print("  needed: %.1f MB = %s" % (need / 1e6, ", ".join("%s %.1f MB" % (k, v / 1e6)
                                                          for k, v in parts.items())))
    print("  baseline worker (empty-points run, no arrays to speak of): %.1f MB" % (base / 1e6))
    for r in pm["ranks"]:
        hwm = r["vmhwm_kb"] * 1024
        tag = "rank 0 (scheduler)" if r["rank"] == 0 else "rank %d (worker)" % r["rank"]
        extra = ""
        if r["rank"] != 0:
            extra = "; above baseline %.1f MB = %.2fx the need" % ((hwm - base) / 1e6,
                                                                  (hwm - base) / need)
            row("memory", "worker_peak_bytes", "rank %d" % r["rank"], hwm, None, None, "", "",
                "bytes")
            row("memory", "worker_peak_over_need", "rank %d" % r["rank"], (hwm - base) / need,
                None, None, "", "", "ratio (peak - baseline) / need")
        print("  %-20s VmHWM %8.1f MB%s" % (tag, hwm / 1e6, extra))
    row("memory", "need_bytes", "mem_point", need, None, None, "", "", "bytes")
    row("memory", "baseline_worker_bytes", "empty", base, None, None, "", "", "bytes")


def main(argv):
    w = argv[1]
    out = argv[argv.index("--csv") + 1] if "--csv" in argv else os.path.join(w, "results.csv")
    root = argv[argv.index("--root") + 1] if "--root" in argv else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    quick = "--quick" in argv
    la = open(os.path.join(w, "loadavg_start")).read().split()[:3] \
        if os.path.exists(os.path.join(w, "loadavg_start")) else []
    print("load average at start: %s (other work on this machine makes every figure noisier)"
          % " ".join(la))
    if la:
        row("env", "loadavg_1min_at_start", "", float(la[0]))
    steps_section(w)
    if h5py is None:
        print("(python3-h5py missing: no sweep/store figures)")
    else:
        sweep_section(w, quick)
        sched_store_section(w)
        mem_section(w, root)
    with open(out, "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["section", "metric", "case", "dynsweep", "torch", "ratio", "target", "met",
                     "unit"])
        for r in ROWS:
            cw.writerow([fmt(v, 6) if isinstance(v, float) else ("" if v is None else v)
                         for v in r])
    print("\nwrote %s (%d figures)" % (out, len(ROWS)))


if __name__ == "__main__":
    main(sys.argv)
