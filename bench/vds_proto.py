#!/usr/bin/python3
"""vds_proto.py -- key costs of "HDF5 virtual datasets over append-only
segment files" (issue 14), against one plain dataset holding the same data.

  /usr/bin/python3 bench/vds_proto.py [--n "10 100 1000 5000"] [--seg VALUES] [--dir DIR]

Models a store whose every publish writes the new data as one segment file
(seg_NNNNNN.h5, dataset /value, SEG float64 values) and a small top file
whose /value is a virtual dataset concatenating all segments. For N
segments it measures:

  write top (explicit)  creating the top file with N explicit mappings (what a
                        publish would rewrite each time: O(N)?) and its size;
  write top (printf)    the same with ONE printf-style mapping
                        (seg_%b.h5, unlimited count; needs equal-size segments);
  open                  h5py.File(top) + dataset + shape;
  slice                 reading 1,000 values at a random offset (a point's
                        series), 20 times, fresh open each time;
  all                   reading the whole dataset once;
  plain                 the same open / slice / all on one chunked dataset
                        (16 KiB chunks, like /series/value) with the data;
  h5dump                `h5dump -d /value -s K -c 10` on the top file (ok?, s).

The segments stay in the page cache (they were just written): the figures are
warm-cache CPU and metadata costs, which is what grows with N.
Standard library + h5py + numpy (Debian python3-h5py).
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np


def t_now():
    return time.perf_counter()


def make_segments(d, n, seg):
    rng = np.random.default_rng(1)
    for i in range(n):
        with h5py.File(os.path.join(d, "seg_%06d.h5" % i), "w") as f:
            f.create_dataset("value", data=rng.random(seg))


def top_explicit(d, n, seg, name="top_explicit.h5"):
    layout = h5py.VirtualLayout(shape=(n * seg,), dtype="f8")
    for i in range(n):
        # relative source names resolve against the top file's directory
        layout[i * seg:(i + 1) * seg] = h5py.VirtualSource("seg_%06d.h5" % i, "value", shape=(seg,))
    p = os.path.join(d, name)
    t0 = t_now()
    with h5py.File(p, "w", libver="earliest") as f:
        f.create_virtual_dataset("value", layout, fillvalue=np.nan)
    t1 = t_now()
    return p, t1 - t0


def top_printf(d, seg, name="top_printf.h5"):
    """One mapping: block i of SEG values <- seg_<i>.h5:/value (file names by %b
    = block number; HDF5 1.10 printf-style VDS). Needs names without the zero
    padding, so it links seg_<i>.h5 -> seg_NNNNNN.h5."""
    from h5py import h5s, h5p, h5t, h5d
    p = os.path.join(d, name)
    t0 = t_now()
    f = h5py.File(p, "w", libver="earliest")
    vspace = h5s.create_simple((seg,), (h5s.UNLIMITED,))
    vspace.select_hyperslab((0,), (h5s.UNLIMITED,), stride=(seg,), block=(seg,))
    sspace = h5s.create_simple((seg,), (seg,))
    sspace.select_all()
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_fill_value(np.array([np.nan]))
    dcpl.set_virtual(vspace, b"segp_%b.h5", b"value", sspace)
    h5d.create(f.id, b"value", h5t.IEEE_F64LE, vspace, dcpl=dcpl)
    f.close()
    return p, t_now() - t0


def measure_reads(p, total, reps=20, dapl_last=False):
    rng = np.random.default_rng(2)
    t0 = t_now()
    f = h5py.File(p, "r")
    ds = f["value"]
    shape = ds.shape
    t_open = t_now() - t0
    f.close()
    ts = []
    for _ in range(reps):
        k = int(rng.integers(0, max(1, total - 1000)))
        t0 = t_now()
        with h5py.File(p, "r") as f:
            x = f["value"][k:k + 1000]
        ts.append(t_now() - t0)
        assert not np.isnan(x).any(), "slice read NaN (a segment not found?)"
    t0 = t_now()
    with h5py.File(p, "r") as f:
        a = f["value"][...]
    t_all = t_now() - t0
    return shape[0], t_open, sorted(ts)[len(ts) // 2], t_all, float(np.nansum(a)), int(np.isnan(a).sum())


def h5dump_ok(p, k):
    t0 = t_now()
    r = subprocess.run(["h5dump", "-d", "/value", "-s", str(k), "-c", "10", p],
                       capture_output=True, text=True, cwd=os.path.dirname(p))
    ok = r.returncode == 0 and "DATA" in r.stdout and "nan" not in r.stdout.lower()
    return ok, t_now() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="10 100 1000 5000")
    ap.add_argument("--seg", type=int, default=8192, help="values per segment (default 8192 = 64 KiB)")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print("h5py %s, HDF5 %s, open-file limit %d; segment = %d float64 (%d KiB)"
          % (h5py.__version__, h5py.version.hdf5_version, soft, a.seg, a.seg * 8 // 1024))
    base = a.dir or tempfile.mkdtemp(prefix="ds-vds.")
    os.makedirs(base, exist_ok=True)
    print("%6s | %18s | %16s | %24s | %24s | %24s | %s" % (
        "N", "top explicit s, KB", "top printf s, KB", "open s VDS/printf/plain",
        "slice ms VDS/printf/plain", "all s VDS/printf/plain", "h5dump VDS, printf"))
    try:
        for n in [int(x) for x in a.n.split()]:
            d = os.path.join(base, "n%d" % n)
            os.makedirs(d)
            make_segments(d, n, a.seg)
            for i in range(n):
                os.symlink("seg_%06d.h5" % i, os.path.join(d, "segp_%d.h5" % i))
            pe, te = top_explicit(d, n, a.seg)
            pp, tp = top_printf(d, a.seg)
            # the plain dataset: the same values in one chunked dataset
            pl = os.path.join(d, "plain.h5")
            with h5py.File(pl, "w") as f:
                v = f.create_dataset("value", shape=(n * a.seg,), dtype="f8", chunks=(2048,),
                                     fletcher32=True)
                for i in range(n):
                    with h5py.File(os.path.join(d, "seg_%06d.h5" % i), "r") as g:
                        v[i * a.seg:(i + 1) * a.seg] = g["value"][...]
            total = n * a.seg
            re = measure_reads(pe, total)
            rp = measure_reads(pp, total)
            rl = measure_reads(pl, total)
            assert re[0] == rp[0] == rl[0] == total, (re[0], rp[0], rl[0], total)
            assert re[4] == rl[4] == rp[4] and re[5] == rp[5] == 0, "VDS and plain differ"
            de = h5dump_ok(pe, total - 5000)
            dp = h5dump_ok(pp, total - 5000)
            print("%6d | %7.4f %9.1f | %6.4f %8.1f | %7.4f %7.4f %7.4f | %7.2f %7.2f %7.2f | "
                  "%7.3f %7.3f %7.3f | %s %.2fs, %s %.2fs"
                  % (n, te, os.path.getsize(pe) / 1024, tp, os.path.getsize(pp) / 1024,
                     re[1], rp[1], rl[1], 1e3 * re[2], 1e3 * rp[2], 1e3 * rl[2],
                     re[3], rp[3], rl[3], "ok" if de[0] else "FAIL", de[1],
                     "ok" if dp[0] else "FAIL", dp[1]))
            sys.stdout.flush()
            shutil.rmtree(d)
    finally:
        if not a.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
