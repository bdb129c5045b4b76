#!/usr/bin/python3
"""Bit-rot campaign (issue 11): flips one bit at a time at deterministic
offsets spread over every region of a finished store, and for each flip checks
that `dynsweep verify` flags it and that the readers (ls, status, show,
export; h5py) either give exactly the original answer or fail -- never
silently different data.

usage: corrupt_campaign.py DYNSWEEP STORE [--per-region N] [--regions a,b] [--segment]

--segment (a format-5 store, docs/store.md "Segments"): the flips go into
its largest segment file instead of STORE (regions: superblock, segment
step / value chunks, global heap, metadata); each flip works on a copy of
STORE and its whole segment directory.
Prints one line per flip and a table of counts per region; exit 1 if any
flip was missed (data differ and verify passed) or a reader silently
returned different data.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np


def regions(path):
    """Byte ranges of the file by what they hold: [(name, lo, hi)]."""
    out = [("superblock", 0, 48)]
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            dsid = obj.id
            reg = ("checkpoint" if name.startswith("checkpoints/") else
                   {"summary": "summary", "grid/axis_values": "grid",
                    "series/index": "series index", "series/step": "series step",
                    "series/value": "series value", "step": "segment step",
                    "value": "segment value"}.get(name))
            if reg is None:
                return
            if obj.chunks:
                for i in range(dsid.get_num_chunks()):
                    ci = dsid.get_chunk_info(i)
                    out.append((reg, ci.byte_offset, ci.byte_offset + ci.size))
            elif dsid.get_offset() is not None:
                out.append((reg, dsid.get_offset(), dsid.get_offset() + dsid.get_storage_size()))
        f.visititems(visit)
    data = open(path, "rb").read()
    for m in re.finditer(b"GCOL", data):  # global heap collections (vlen strings)
        size = int.from_bytes(data[m.start() + 8:m.start() + 16], "little")
        if 16 < size < len(data):
            out.append(("global heap", m.start(), m.start() + size))
    return out, len(data)


def pick(per_region, regs, size, only):
    """Deterministic offsets: per region, evenly spread over its bytes; the
    bytes no region claims (object headers, chunk indexes, heaps, free space)
    are "metadata"."""
    claimed = np.zeros(size, bool)
    by = {}
    for name, lo, hi in regs:
        claimed[lo:hi] = True
        by.setdefault(name, []).extend(range(lo, hi))
    by["metadata"] = list(np.flatnonzero(~claimed))
    flips = []
    for name, offs in by.items():
        if only and name not in only:
            continue
        offs = sorted(set(offs))
        k = min(per_region * (2 if name in ("metadata", "series value", "segment value") else 1), len(offs))
        for i in range(k):
            flips.append((name, int(offs[int((i + 0.5) * len(offs) / k)]), i % 8))
    return flips


def content(path):
    """Hash of everything h5py reads, or the error."""
    h = hashlib.sha256()
    try:
        with h5py.File(path, "r") as f:
            def item(name, obj):
                h.update(name.encode())
                for k in sorted(obj.attrs):
                    h.update(k.encode() + repr(obj.attrs[k]).encode())
                if isinstance(obj, h5py.Dataset):
                    v = obj[()]
                    h.update(v.tobytes() if isinstance(v, np.ndarray) and v.dtype.kind != "O"
                             else repr(v).encode())
            item("/", f)
            f.visititems(item)
        return h.hexdigest()
    except Exception as e:  # noqa: BLE001 -- any failure is a (clear) error here
        return "error: " + type(e).__name__


def content_isolated(path):
    """content() in a child: HDF5 can crash on some damaged files."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: h5py already imported, no start-up cost
        os.close(r)
        os.write(w, content(path).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        out = fh.read()
    _, status = os.waitpid(pid, 0)
    return out if status == 0 else "error: crashed (status %d)" % status


def readers(dyn, path, npoints):
    cmds = [["ls", path], ["status", path], ["export", path],
            ["export", path, "--series", "loss"], ["export", path, "--series", "sv/W1"],
            ["show", path, "0"], ["show", path, str(npoints - 1)]]
    res = []
    for c in cmds:
        p = subprocess.run([dyn] + c, capture_output=True, text=True)
        out = re.sub(r"last update .* ago", "last update ? ago", p.stdout).replace(path, "STORE")
        res.append((" ".join(c[:1] + c[2:]), p.returncode, out, p.stderr.strip()[-300:]))
    return res


def largest_segment(store):
    """(segment directory name, file name) of a format-5 store's largest segment."""
    with h5py.File(store, "r") as f:
        g = f["series"]
        d = g.attrs["segment_dir"]
        d = d.decode() if isinstance(d, bytes) else str(d)
        u = f.attrs["store_uuid"]
        u = u.decode() if isinstance(u, bytes) else str(u)
        x = max(g.attrs["segments"], key=lambda x: int(x[3]))
        return d, "%s-%d-%d.h5" % (u, int(x[0]), int(x[1]))


def main():
    if sys.argv[1] == "--content":
        print(content(sys.argv[2]))
        return 0
    dyn, store = sys.argv[1], sys.argv[2]
    per = int(sys.argv[sys.argv.index("--per-region") + 1]) if "--per-region" in sys.argv else 4
    only = set(sys.argv[sys.argv.index("--regions") + 1].split(",")) if "--regions" in sys.argv else None
    with h5py.File(store, "r") as f:
        npoints = len(f["summary"])
    seg = largest_segment(store) if "--segment" in sys.argv else None
    target = os.path.join(os.path.dirname(os.path.abspath(store)), *seg) if seg else store
    regs, size = regions(target)
    flips = pick(per, regs, size, only)
    ref_content = content(store)
    ref = readers(dyn, store, npoints)
    tmp = tempfile.mkdtemp()
    counts, bad = {}, 0
    try:
        for name, off, bit in flips:
            p = os.path.join(tmp, os.path.basename(store) if seg else "s.h5")
            shutil.copyfile(store, p)
            q = p
            if seg:  # the store and its segments; the flip in the segment
                shutil.rmtree(os.path.join(tmp, seg[0]), ignore_errors=True)
                shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(store)), seg[0]),
                                os.path.join(tmp, seg[0]))
                q = os.path.join(tmp, *seg)
            with open(q, "r+b") as fh:
                fh.seek(off)
                b = fh.read(1)[0]
                fh.seek(off)
                fh.write(bytes([b ^ (1 << bit)]))
            v = subprocess.run([dyn, "verify", p], capture_output=True, text=True)
            same = content_isolated(p) == ref_content
            wrong = []  # readers that exited 0 with different output
            failed = 0
            for (what, rc, out, err), (_, rc0, out0, _) in zip(readers(dyn, p, npoints), ref):
                if rc != 0:
                    failed += rc0 == 0
                    if not err:
                        wrong.append(what + " (failed without a message)")
                elif rc0 != 0 or out != out0:
                    wrong.append(what)
            detected = v.returncode != 0
            verdict = ("detected" if detected else "harmless" if same and not failed else "MISSED")
            if wrong or verdict == "MISSED":
                bad += 1
            c = counts.setdefault(name, [0, 0, 0, 0])
            c[0] += 1
            c[1] += detected
            c[2] += verdict == "harmless"
            c[3] += bool(wrong)
            last = (v.stdout.strip().splitlines() or [v.stderr.strip()])[-1]
            print(f"{name:13s} byte {off:7d} bit {bit}: {verdict}; verify exit {v.returncode} "
                  f"({last[:110]}); h5py {'same' if same else 'differs/fails'}; readers failed "
                  f"{failed}/{len(ref)}" + (f"; SILENTLY WRONG: {', '.join(wrong)}" if wrong else ""))
    finally:
        shutil.rmtree(tmp)
    print(f"{'region':13s} {'flips':>5s} {'detected':>8s} {'harmless':>8s} {'readers wrong':>13s}")
    tot = [0, 0, 0, 0]
    for name, c in counts.items():
        print(f"{name:13s} {c[0]:5d} {c[1]:8d} {c[2]:8d} {c[3]:13d}")
        tot = [a + b for a, b in zip(tot, c)]
    print(f"{'total':13s} {tot[0]:5d} {tot[1]:8d} {tot[2]:8d} {tot[3]:13d}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
