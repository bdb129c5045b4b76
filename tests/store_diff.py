"""store_diff.py A B [--ids LO-HI] -- the trajectories of two dynsweep stores, compared bit for bit
(what `h5diff A B /points /points` did for the version-2 layout).

Every point written in either store must be written in both, with the same series
in the same order, the same unit, definition and shape, and step and value arrays
equal byte for byte (NaN payloads and -0.0 included). The sweep-wide /series
tables of a version-3 store are in the order the points finished, which depends on
the number of ranks, so the files themselves are not compared. Reads any format
version (tools/dynsweep_store.py). --ids LO-HI: only points LO..HI (inclusive). --except I,J,..:
leave those points out (points failed on purpose in one store). Exit 0 if equal, else prints the
differences and exits 1."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from dynsweep_store import read_points  # noqa: E402


def main():
    a_path, b_path = sys.argv[1], sys.argv[2]
    ids, skip = None, set()
    args = sys.argv[3:]
    while len(args) >= 2:
        if args[0] == "--ids":
            lo, hi = (int(x) for x in args[1].split("-"))
            ids = list(range(lo, hi + 1))
        elif args[0] == "--except":
            skip = {int(x) for x in args[1].split(",") if x}
        args = args[2:]
    with h5py.File(a_path, "r") as f:
        a = read_points(f, ids)
    with h5py.File(b_path, "r") as f:
        b = read_points(f, ids)
    for pid in skip:
        a.pop(pid, None)
        b.pop(pid, None)
    problems = []
    for pid in sorted(set(a) | set(b)):
        if pid not in a or pid not in b:
            problems.append("point %d written only in %s" % (pid, a_path if pid in a else b_path))
            continue
        sa, sb = a[pid], b[pid]
        if [x[:3] for x in sa] != [x[:3] for x in sb]:
            problems.append("point %d: series %s != %s" % (pid, [x[0] for x in sa], [x[0] for x in sb]))
            continue
        for (name, _, _, st_a, v_a), (_, _, _, st_b, v_b) in zip(sa, sb):
            st_a, st_b, v_a, v_b = (np.asarray(x) for x in (st_a, st_b, v_a, v_b))
            if st_a.shape != st_b.shape or v_a.shape != v_b.shape or \
                    st_a.tobytes() != st_b.tobytes() or v_a.tobytes() != v_b.tobytes():
                problems.append("point %d: series %s differs" % (pid, name))
    for p in problems[:20]:
        print("store_diff: %s" % p)
    if problems:
        print("store_diff: %s and %s differ (%d problems)" % (a_path, b_path, len(problems)))
        return 1
    print("store_diff: %d points equal bit for bit" % len(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
