"""compat_diff.py REF NEW -- two dynsweep stores made by the same sweep, compared point by
point, provenance aside (issue 25's compatibility test, tests/compat.sh).

Strict about everything a store records except the provenance and publish-history items
listed below (IGNORED_*), which say when, where, how fast and in how many publishes a
store was written, not what it holds:

- the objects: the same groups and datasets at the same paths;
- every attribute of every object, by name, type and value (root attributes: all but
  IGNORED_ROOT_ATTRS; format 5's publish-history attributes by name only);
- every dataset's type, shape, layout (virtual or not; chunks, filters, fill value);
- /summary: the compound type (field names, order, types, offsets) and every field of
  every row bit for bit but wall_s (reported as "point ID: FIELD ref X new Y");
- /series: the kinds tables (names, units, definitions) in order, and per point the
  series (name, unit, definition, shape, step and value arrays bit for bit, NaN payloads
  and -0.0 included) in recorded order, and the index rows (point, kind, ncols, n) in
  order. A format-4 store's index, step and value tables are also compared whole, bit
  for bit (the sweeps run with one worker, so the points finish in one order); in
  format 5 they are virtual datasets over segment and block files whose layout follows
  the publish timing (merges, retired rows), so there they are checked through the
  per-point arrays the index addresses;
- every other dataset bit for bit (strings as text); map arrays reported by pixel
  ("/map/measure pixel (3, 7): ref X new Y"), and for a map store also the arrays
  dynsweep.open(p).map() derives (outcome class, computed, inferred, step, measure,
  final_ratio, peak_ratio, raw_outcome, refine_levels, refine_axes, steps, coords).

Exit 0 if equal, 1 if they differ (the first 40 differences on stdout), 2 on an error.
"""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, "..", "python"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from dynsweep import store as dstore  # noqa: E402

# root attributes that are provenance: when, where, by which build, how fast, how often
IGNORED_ROOT_ATTRS = {
    "dynsweep_version": "the version string of the writer",
    "library_versions": "the library versions linked",
    "hosts": "host names",
    "rank_nodes": "node of each rank",
    "start_time": "creation time",
    "end_time": "completion time",
    "updated": "time of the last publish",
    "updated_unix": "time of the last publish",
    "session_start_unix": "start of the last session",
    "wall_s": "wall seconds of the sweep",
    "rank0_cpu_s": "CPU seconds of rank 0",
    "eta_unix": "the progress estimate",
    "store_uuid": "random at creation",
    "generation": "number of publishes (timing)",
    "digest_attrs": "CRC-32 over the attribute strings, the provenance ones included",
}
# format 5 (docs/store.md "Segments"): which segment and block files of which publish
# generation hold the data, and the retired ranges of earlier publishes: publish timing
IGNORED_LAYOUT_ATTRS = {"segments", "retired", "blocks"}
IGNORED_SUMMARY_FIELDS = {"wall_s": "wall seconds of the point"}
# /series datasets compared per point (read_points), not as raw tables
SERIES_TABLES = {"series/index", "series/step", "series/value"}
MAX_SHOWN = 40


def _val(v):
    """An attribute or dataset value as (kind, comparable bytes or text, shown text)."""
    if isinstance(v, bytes):
        return ("s", v.decode("utf-8", "replace"), repr(v))
    if isinstance(v, str):
        return ("s", v, repr(v))
    a = np.asarray(v)
    if a.dtype.kind == "O":
        t = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in a.ravel()]
        return ("s", (a.shape, t), repr(t)[:200])
    return ("n", (a.dtype.str, a.shape, a.tobytes()), repr(a.tolist())[:200])


def _shown(x):
    if isinstance(x, np.float32):
        return "%r (0x%08x)" % (float(x), np.asarray(x, dtype="<f4").view("<u4").item())
    if isinstance(x, (float, np.floating)):
        return "%r (0x%016x)" % (float(x), np.asarray(x, dtype="<f8").view("<u8").item())
    if isinstance(x, bytes):
        return repr(x.rstrip(b"\0"))
    return repr(x.item() if isinstance(x, np.generic) else x)


class Diff:
    def __init__(self, ref, new):
        self.ref, self.new, self.problems = ref, new, []

    def bad(self, msg):
        self.problems.append(msg)

    # ---- objects and attributes ---------------------------------------------------
    def objects(self, f):
        out = {"/": "group"}
        f.visititems(lambda n, o: out.__setitem__(
            "/" + n, "dataset" if isinstance(o, h5py.Dataset) else "group"))
        return out

    def attrs(self, path, a, b):
        na = set(a.attrs.keys()) - IGNORED_LAYOUT_ATTRS
        nb = set(b.attrs.keys()) - IGNORED_LAYOUT_ATTRS
        for k in sorted(na ^ nb):
            self.bad("%s: attribute %s only in %s" % (path, k, "ref" if k in na else "new"))
        for k in sorted(na & nb):
            if path == "/" and k in IGNORED_ROOT_ATTRS:
                continue
            va, vb = _val(a.attrs[k]), _val(b.attrs[k])
            if va[:2] != vb[:2]:
                self.bad("%s: attribute %s: ref %s new %s" % (path, k, va[2], vb[2]))

    def props(self, path, a, b):
        def p(d):
            q = {"dtype": d.dtype.descr if d.dtype.fields else d.dtype.str, "shape": d.shape,
                 "virtual": d.is_virtual}
            if not d.is_virtual:
                q.update(chunks=d.chunks, compression=d.compression,
                         compression_opts=d.compression_opts, shuffle=d.shuffle,
                         fletcher32=d.fletcher32, maxshape=d.maxshape)
                if d.dtype.kind in "biuf":  # (h5py's fillvalue crashes on string types)
                    q["fillvalue"] = np.asarray(d.fillvalue).tobytes()
            return q
        pa, pb = p(a), p(b)
        for k in pa:
            if pa[k] != pb.get(k):
                self.bad("%s: %s: ref %r new %r" % (path, k, pa[k], pb.get(k)))
        return pa == pb

    # ---- datasets -------------------------------------------------------------------
    def summary(self, a, b):
        ra, rb = a[...], b[...]
        if ra.dtype != rb.dtype or ra.shape != rb.shape:
            return  # props() said so
        for i in range(len(ra)):
            pid = int(ra["id"][i])
            for k in ra.dtype.names:
                if k in IGNORED_SUMMARY_FIELDS:
                    continue
                x, y = ra[k][i], rb[k][i]
                if np.asarray(x).tobytes() != np.asarray(y).tobytes():
                    self.bad("/summary point %d (row %d): %s ref %s new %s"
                             % (pid, i, k, _shown(x), _shown(y)))

    def plain(self, path, a, b):
        if a.dtype.kind == "O" or a.dtype.kind == "S" and a.shape == ():
            va, vb = _val(a[()]), _val(b[()])
            if va[:2] != vb[:2]:
                self.bad("%s: ref %s new %s" % (path, va[2], vb[2]))
            return
        xa, xb = a[...], b[...]
        if xa.shape != xb.shape or xa.dtype != xb.dtype:
            return  # props() said so
        if xa.tobytes() == xb.tobytes():
            return
        if xa.dtype.fields:
            self.bad("%s differs" % path)
            return
        ua = xa.reshape(xa.shape + (1,)).view(np.uint8).reshape(xa.shape + (-1,)) \
            if xa.ndim else None
        if ua is None:
            self.bad("%s: ref %s new %s" % (path, _shown(xa[()]), _shown(xb[()])))
            return
        ub = xb.reshape(xb.shape + (1,)).view(np.uint8).reshape(xb.shape + (-1,))
        where = np.argwhere((ua != ub).any(axis=-1))
        what = "pixel" if path.startswith("/map/") else "element"
        for idx in where[:10]:
            t = tuple(int(j) for j in idx)
            self.bad("%s %s %s: ref %s new %s" % (path, what, t if len(t) > 1 else t[0],
                                                 _shown(xa[t]), _shown(xb[t])))
        if len(where) > 10:
            self.bad("%s: %d %ss differ in all" % (path, len(where), what))

    def series(self, fa, fb):
        ia, ib = fa["series/index"][...], fb["series/index"][...]
        key = ["point", "kind", "ncols", "n"]
        la = ia[ia["point"] >= 0][key] if ia.dtype.fields else ia
        lb = ib[ib["point"] >= 0][key] if ib.dtype.fields else ib
        if la.tobytes() != lb.tobytes():
            self.bad("/series/index: the rows (point, kind, ncols, n) differ: ref %d rows new %d"
                     % (len(la), len(lb)))
        pa, pb = dstore.read_points(fa), dstore.read_points(fb)
        for pid in sorted(set(pa) | set(pb)):
            if pid not in pa or pid not in pb:
                self.bad("point %d: series written only in %s" % (pid, "ref" if pid in pa else "new"))
                continue
            sa, sb = pa[pid], pb[pid]
            if [x[:3] for x in sa] != [x[:3] for x in sb]:
                self.bad("point %d: series %s != %s" % (pid, [x[0] for x in sa], [x[0] for x in sb]))
                continue
            for (name, _, _, st_a, v_a), (_, _, _, st_b, v_b) in zip(sa, sb):
                st_a, st_b, v_a, v_b = (np.asarray(x) for x in (st_a, st_b, v_a, v_b))
                if st_a.shape != st_b.shape or st_a.tobytes() != st_b.tobytes():
                    self.bad("point %d: series %s: steps differ (ref %d records, new %d)"
                             % (pid, name, len(st_a), len(st_b)))
                elif v_a.shape != v_b.shape or v_a.tobytes() != v_b.tobytes():
                    bad = np.argwhere(v_a.reshape(len(st_a), -1).view(np.uint64) !=
                                      v_b.reshape(len(st_b), -1).view(np.uint64))
                    r, c = (int(x) for x in bad[0]) if len(bad) else (0, 0)
                    self.bad("point %d: series %s: %d values differ, first at step %d column %d: "
                             "ref %s new %s" % (pid, name, len(bad), int(st_a[r]), c,
                                                _shown(v_a.reshape(len(st_a), -1)[r, c]),
                                                _shown(v_b.reshape(len(st_b), -1)[r, c])))
        return len(pa)

    def map_view(self):
        ma, mb = dstore.Store(self.ref).map(), dstore.Store(self.new).map()
        for k in sorted(set(ma) | set(mb)):
            if k in ("axes", "coords"):
                if _val(str(ma[k]))[1] != _val(str(mb[k]))[1] or (k == "coords" and any(
                        np.asarray(ma[k][n]).tobytes() != np.asarray(mb[k].get(n)).tobytes()
                        for n in ma[k])):
                    self.bad("map(): %s differ" % k)
                continue
            xa, xb = np.asarray(ma.get(k)), np.asarray(mb.get(k))
            if xa.shape != xb.shape or xa.dtype != xb.dtype or xa.tobytes() != xb.tobytes():
                where = np.argwhere(xa != xb) if xa.shape == xb.shape and xa.ndim else []
                at = " first at pixel %s: ref %s new %s" % (
                    tuple(int(j) for j in where[0]), _shown(xa[tuple(where[0])]),
                    _shown(xb[tuple(where[0])])) if len(where) else ""
                self.bad("map(): %s differs (%d pixels)%s" % (k, len(where), at))

    # ---- all ------------------------------------------------------------------------
    def run(self):
        with h5py.File(self.ref, "r") as fa, h5py.File(self.new, "r") as fb:
            oa, ob = self.objects(fa), self.objects(fb)
            for p in sorted(set(oa) ^ set(ob)):
                self.bad("%s: %s only in %s" % (p, (oa.get(p) or ob.get(p)), "ref" if p in oa else "new"))
            for p in sorted(set(oa) & set(ob)):
                a, b = fa[p], fb[p]
                self.attrs(p, a, b)
                if oa[p] != "dataset" or ob[p] != "dataset":
                    continue
                same = self.props(p, a, b)
                if p[1:] in SERIES_TABLES and (a.is_virtual or b.is_virtual):
                    continue  # format 5: the tables' layout follows the publishes (series())
                if p == "/summary":
                    if same:
                        self.summary(a, b)
                else:
                    self.plain(p, a, b)
            npts = self.series(fa, fb) if "series" in fa and "series" in fb else 0
            is_map = "map" in fa and "map" in fb
            nsum = fa["summary"].shape[0] if "summary" in fa else 0
        if is_map:
            self.map_view()
        what = ("%d pixels" % np.prod(fa_shape(self.ref))) if is_map else \
            "%d summary rows, %d points' series" % (nsum, npts)
        return what


def fa_shape(path):
    with h5py.File(path, "r") as f:
        return tuple(int(x) for x in f["map"].attrs["shape"])


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    d = Diff(sys.argv[1], sys.argv[2])
    try:
        what = d.run()
    except Exception as e:  # noqa: BLE001 - a store that cannot be read is an error, exit 2
        print("compat_diff: %s vs %s: %s: %s" % (d.ref, d.new, type(e).__name__, e))
        return 2
    for p in d.problems[:MAX_SHOWN]:
        print("compat_diff: %s" % p)
    if d.problems:
        print("compat_diff: %s and %s differ (%d differences)" % (d.ref, d.new, len(d.problems)))
        return 1
    print("compat_diff: %s = %s: %s equal, provenance aside" % (d.ref, d.new, what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
