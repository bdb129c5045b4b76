"""store_check.py STORE [REFERENCE] -- deep check of a dynsweep store with h5py
(used by tests/durability.sh, tests/resume.sh, tests/faults.sh).

Every finished point (done, diverged, failed) in /summary must have its
series written (format 3: rows in /series/index; 1-2: the /points/<id> group),
every series' step and value with consistent lengths and ncols. With REFERENCE (a store of an uninterrupted run
of the same sweep), every finished point's row and series must equal the
reference bit for bit. Points are matched by id. Exit 0 if all is well,
else prints the problems and exits 1."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from dynsweep_store import StoreMoved, read_points  # noqa: E402

FINAL = (1, 2, 3)


def series(lst):
    out = {}
    for name, _, _, step, val in lst:
        step, val = np.asarray(step), np.asarray(val)
        ncols = 1 if val.ndim == 1 else val.shape[1]
        if val.shape[0] != step.shape[0]:
            raise ValueError("series %s: %d steps but %d values" % (name, step.shape[0], val.shape[0]))
        if (val.ndim == 1) != (ncols == 1) or (val.ndim == 2 and val.shape[1] != ncols):
            raise ValueError("series %s: shape %s but ncols %d" % (name, val.shape, ncols))
        out[name] = (step, val)
    return out


def main():
    # a reader of a running sweep opens the store again when the version it
    # read was published over and its files deleted (docs/store.md, "Blocks")
    for _ in range(4):
        try:
            return check()
        except StoreMoved as e:
            print("store_check: %s" % e)
    return check()


def check():
    path = sys.argv[1]
    ref = h5py.File(sys.argv[2], "r") if len(sys.argv) > 2 else None
    problems = []
    with h5py.File(path, "r") as f:
        if f.attrs["format"] != "dynsweep-store":
            problems.append("not a dynsweep store")
        s = f["summary"][...]
        if not np.array_equal(s["id"], np.arange(len(s))):
            problems.append("summary ids are not 0..n-1")
        if f["grid/axis_values"].shape[0] != len(s):
            problems.append("grid and summary disagree")
        rs = ref["summary"][...] if ref is not None else None
        pts = read_points(f)
        rpts = read_points(ref) if ref is not None else None
        nfinal = 0
        for row in s:
            pid, st = int(row["id"]), int(row["status"])
            if st not in FINAL:
                continue
            nfinal += 1
            if pid not in pts:
                problems.append("point %d is %d but has no series written" % (pid, st))
                continue
            try:
                got = series(pts[pid])
            except (KeyError, ValueError) as e:
                problems.append("point %d: %s" % (pid, e))
                continue
            if ref is None:
                continue
            rrow = rs[pid]
            for k in ("status", "steps", "final_loss", "min_loss", "final_test_loss", "diverged_step",
                      "replica", "width", "depth", "lr", "init_scale"):
                if np.asarray(row[k]).tobytes() != np.asarray(rrow[k]).tobytes():
                    problems.append("point %d: summary %s %r != reference %r" % (pid, k, row[k], rrow[k]))
            want = series(rpts.get(pid, []))
            if list(got) != list(want):
                problems.append("point %d: series %s != reference %s" % (pid, list(got), list(want)))
                continue
            for k in want:
                if got[k][0].tobytes() != want[k][0].tobytes() or got[k][1].tobytes() != want[k][1].tobytes():
                    problems.append("point %d: series %s differs from the reference" % (pid, k))
    for p in problems[:20]:
        print("store_check: %s: %s" % (path, p))
    if not problems:
        print("store_check: %s: %d finished points complete%s" % (path, nfinal,
              " and equal to the reference" if ref is not None else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
