"""teams_compare.py A.h5 B.h5 [RTOL] -- every series of every point of store A
equals store B's to RTOL relative (default 1e-10): |a - b| <= RTOL * max(|a|,
|b|) + RTOL * 1e-3 * max|series| (the absolute term only matters for values
at rounding level next to the series' largest, e.g. a zero singular value).
Steps must match exactly; both stores must have the same points and series
and every point finished. Prints the largest relative difference seen per
kind of series (tests/teams.sh). Exit 0 if all agree, else 1."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from dynsweep_store import Store  # noqa: E402


def main():
    a, b = Store(sys.argv[1]), Store(sys.argv[2])
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-10
    ta, tb = a.table(), b.table()
    problems, worst = [], {}
    if len(ta["id"]) != len(tb["id"]) or len(ta["id"]) == 0:
        problems.append("point counts differ or are zero: %d vs %d" % (len(ta["id"]), len(tb["id"])))
    for i in range(min(len(ta["id"]), len(tb["id"]))):
        if ta["status_name"][i] != "done" or tb["status_name"][i] != "done":
            problems.append("point %d not done (%s, %s)" % (i, ta["status_name"][i], tb["status_name"][i]))
            continue
        sa, sb = a.point_series(i), b.point_series(i)
        if sorted(sa) != sorted(sb) or not sa:
            problems.append("point %d: series differ: %s vs %s" % (i, sorted(sa), sorted(sb)))
            continue
        for name in sa:
            (stepa, va), (stepb, vb) = sa[name], sb[name]
            if not np.array_equal(stepa, stepb) or va.shape != vb.shape:
                problems.append("point %d %s: steps or shapes differ" % (i, name))
                continue
            va, vb = np.asarray(va, float), np.asarray(vb, float)
            if va.size == 0:
                continue
            scale = max(np.nanmax(np.abs(va)), 1e-300)
            with np.errstate(invalid="ignore"):
                diff = np.abs(va - vb)
            same_nan = (np.isnan(va) & np.isnan(vb)) | (va == vb)  # and equal infinities (s1/s2 of 1-row W)
            lim = rtol * np.maximum(np.abs(va), np.abs(vb)) + rtol * 1e-3 * scale
            bad = ~same_nan & ~(diff <= lim)
            with np.errstate(invalid="ignore"):
                rel = np.where(same_nan, 0, diff / np.maximum(np.maximum(np.abs(va), np.abs(vb)), 1e-3 * scale))
            kind = name.split("/")[0] if "/" in name else name
            worst[kind] = max(worst.get(kind, 0.0), float(np.nanmax(rel)))
            if bad.any():
                k = int(np.argmax(bad.ravel()))
                problems.append("point %d %s: %d values differ beyond %g (e.g. %r vs %r)"
                                % (i, name, int(bad.sum()), rtol, va.ravel()[k], vb.ravel()[k]))
    print("largest relative difference per series kind: " +
          ", ".join("%s %.2g" % (k, v) for k, v in sorted(worst.items())))
    for p in problems[:20]:
        print("PROBLEM: " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
