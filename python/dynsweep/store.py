"""dynsweep.store -- read a dynsweep HDF5 store (docs/store.md) with h5py and numpy.
(tools/dynsweep_store.py is this module, for scripts that put tools/ on sys.path.)

    from dynsweep.store import Store      # or: sys.path.insert(0, "tools"); from dynsweep_store import Store

    st = Store("sweep.h5")                 # reads the summary, grid and sweep file
    t = st.table()                         # dict of numpy arrays, one entry per point
    t["lr"], t["model.type"], t["status_name"], t["final_loss"], t["steps_to_tol"]
    rec = st.records()                     # the same as one numpy structured array
    for params, step, value in st.series("loss", where={"model.type": "relu"}):
        ...                                # params: {'lr': 0.02, 'width': 8, ..., 'id': 3}

The store may be read while a sweep is running: every call opens the file
read-only, reads and closes it again (no handle is kept), with HDF5 file
locking off for the reader; a read that fails (e.g. because a new snapshot
replaced the file at that moment) is tried once more. Call refresh() to see
newer summary rows.

Grid parameters come back by axis name (lr, width, model.type, ...). Numeric
axes are float64 arrays (whole numbers stay floats); enum and bool axes are
decoded to their names ("relu", "true") using the sweep file stored in the
store (/sweep/yaml) and the point's grid combination.
"""
import os
import time

# HDF5 1.10 refuses to open a file another process holds open for writing
# unless file locking is off; reading published snapshots needs no lock.
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")

from ._deps import require  # noqa: E402

h5py = require("h5py")
np = require("numpy")

from .refine import fill_refined  # noqa: E402

try:
    import yaml  # python3-yaml
except ImportError:  # pragma: no cover - decoding falls back to numeric codes
    yaml = None

# 1: docs/store.md as first written; 2: the crash-safe store (same layout plus run
# bookkeeping attributes and /checkpoints); 3: the series of all points in
# sweep-wide tables under /series instead of one group per point under /points;
# 4: checksums and digests; 5: /series/step and value are virtual datasets over
# segment files in a directory next to the store (check_segments).
KNOWN_FORMAT_VERSIONS = (1, 2, 3, 4, 5)
STATUS_NAMES = {0: "pending", 1: "done", 2: "diverged", 3: "failed", 4: "running"}
STATUS_CODES = {v: k for k, v in STATUS_NAMES.items()}
ALIASES = {"width": "model.width", "depth": "model.depth", "lr": "optimizer.lr",
           "init_scale": "model.init_scale"}
SUMMARY_FIELDS = ("id", "combo", "replica", "width", "depth", "lr", "init_scale", "status",
                  "steps", "final_loss", "min_loss", "final_test_loss", "diverged_step",
                  "wall_s", "rank", "reason")


class StoreError(Exception):
    """Not a dynsweep store, or a store this module cannot read."""


class StoreMoved(StoreError):
    """A running sweep published its store anew while this reader read an older version,
    and the publish after next deleted the files that version lists (docs/store.md,
    "Blocks"): open the store again."""


def _moved(f):
    """True when the file at f's path is no longer the one f has open (a newer publish)."""
    try:
        return os.fstat(f.id.get_vfd_handle()).st_ino != os.stat(f.filename).st_ino
    except Exception:  # noqa: BLE001 -- another driver, or the path gone: not known to have moved
        return False


class _Series3:
    """/series of a version-3 store (docs/store.md): index rows grouped by point."""

    def __init__(self, f):
        g = f["series"]
        check_segments(f)
        self.names = [_s(x) for x in g["names"].asstr()[...]]
        self.units = [_s(x) for x in g["units"].asstr()[...]]
        self.defs = [_s(x) for x in g["definitions"].asstr()[...]]
        self.index = g["index"][...]
        self.step = g["step"]
        self.value = g["value"]
        self.rows = {}
        for i, pid in enumerate(self.index["point"].tolist()):
            if pid >= 0:
                self.rows.setdefault(pid, []).append(i)
        still_there(f)  # the index was read from the block files checked above

    def point(self, pid, names=None):
        """[(name, unit, definition, step, value)] of point pid in recorded order
        (names: only these series), None if it was not written."""
        if pid not in self.rows:
            return None
        out = []
        for i in self.rows[pid]:
            r = self.index[i]
            k, nc, n = int(r["kind"]), int(r["ncols"]), int(r["n"])
            if k < 0 or (names is not None and self.names[k] not in names):
                continue
            s0, v0 = int(r["step_start"]), int(r["value_start"])
            step = self.step[s0:s0 + n]
            val = self.value[v0:v0 + n * nc]
            if nc > 1:
                val = val.reshape(n, nc)
            out.append((self.names[k], self.units[k], self.defs[k], step, val))
        return out


def check_segments(f):
    """Format 5: every segment file /series lists exists next to the store, belongs to it
    and has the listed sizes, and /series/step and value map exactly those (a VDS whose
    source is missing reads fill values without an error). Raises StoreError."""
    if int(_s(f.attrs.get("format_version", 0))) < 5:
        return
    g = f["series"]
    segdir = _s(g.attrs["segment_dir"])
    segs = g.attrs["segments"] if "segments" in g.attrs else np.zeros((0, 4), np.int64)
    uuid = _s(f.attrs["store_uuid"])
    top = os.path.dirname(os.path.abspath(f.filename))
    names = ["%s-%d-%d.h5" % (uuid, int(x[0]), int(x[1])) for x in segs]
    for dname, col in (("step", 2), ("value", 3)):
        d = g[dname]
        srcs = d.virtual_sources() if d.is_virtual else []
        got = [(s.file_name, s.dset_name) for s in srcs]
        want = [(segdir + "/" + n, dname) for n in names]
        if got != want:
            raise StoreError("%s: /series/%s maps %s, /series lists %s (damaged?)"
                             % (f.filename, dname, got, want))
    for x, n in zip(segs, names):
        p = os.path.join(top, segdir, n)
        try:
            with h5py.File(p, "r") as s:
                ok = (_s(s.attrs.get("format", "")) == "dynsweep-segment"
                      and _s(s.attrs.get("store_uuid", "")) == uuid
                      and int(s.attrs.get("generation", -1)) == int(x[0])
                      and int(s.attrs.get("k", -1)) == int(x[1])
                      and s["step"].shape == (int(x[2]),) and s["value"].shape == (int(x[3]),))
        except (OSError, KeyError) as e:
            if _moved(f):
                raise StoreMoved("%s: published anew while it was read (segment %s is gone); open "
                                 "the store again" % (f.filename, p))
            raise StoreError("%s: segment %s is missing or damaged: %s; a store is the file plus its "
                             "directory %s/ (copy or move both)" % (f.filename, p, e, segdir))
        if not ok:
            raise StoreError("%s: segment %s does not belong to this store or has other sizes "
                             "than /series lists" % (f.filename, p))
    check_blocks(f, top, segdir, uuid)


BLOCKED = (("summary", "sum"), ("series/index", "idx"), ("grid/axis_values", "axv"))


def check_blocks(f, top, segdir, uuid):
    """Format 5: /summary, /series/index and /grid/axis_values with an attribute block_rows
    are virtual datasets over block files <uuid>-<tag>-<gen>-<b>.h5 (attribute blocks: gen,
    rows of each); each must exist, belong to this store and have its rows, and the mappings
    must name exactly them (a missing source reads fill values without an error)."""
    for dname, tag in BLOCKED:
        if dname not in f or "block_rows" not in f[dname].attrs:
            continue
        d = f[dname]
        br = int(d.attrs["block_rows"])
        blocks = d.attrs["blocks"] if "blocks" in d.attrs else np.zeros((0, 2), np.int64)
        names = ["%s-%s-%d-%d.h5" % (uuid, tag, int(x[0]), b) for b, x in enumerate(blocks)]
        got = [(s.file_name, s.dset_name) for s in d.virtual_sources()] if d.is_virtual else []
        if got != [(segdir + "/" + n, "rows") for n in names] or \
                (len(blocks) and int(sum(int(x[1]) for x in blocks)) != d.shape[0]):
            raise StoreError("%s: /%s maps %s, its attribute blocks lists %s (damaged?)"
                             % (f.filename, dname, got, names))
        for b, (x, n) in enumerate(zip(blocks, names)):
            p = os.path.join(top, segdir, n)
            try:
                with h5py.File(p, "r") as s:
                    ok = (_s(s.attrs.get("format", "")) == "dynsweep-block"
                          and _s(s.attrs.get("store_uuid", "")) == uuid
                          and _s(s.attrs.get("dataset", "")) == tag
                          and int(s.attrs.get("generation", -1)) == int(x[0])
                          and int(s.attrs.get("block", -1)) == b
                          and s["rows"].shape[0] == int(x[1]))
            except (OSError, KeyError) as e:
                if _moved(f):
                    raise StoreMoved("%s: published anew while it was read (block file %s is gone); "
                                     "open the store again" % (f.filename, p))
                raise StoreError("%s: block %d of /%s (rows %d..%d) is missing or damaged: %s: %s; a "
                                 "store is the file plus its directory %s/ (copy or move both)"
                                 % (f.filename, b, dname, b * br, b * br + int(x[1]) - 1, p, e, segdir))
            if not ok:
                raise StoreError("%s: block file %s does not belong to this store or has other "
                                 "rows than /%s lists" % (f.filename, p, dname))


def still_there(f):
    """Format 5, after a read through the virtual datasets: every segment and block file
    the open version lists is still there. A publish after next deletes them, and HDF5
    reads a missing source as fill values without an error; names are never reused, so
    present after the read means read from them (src/store/blocks.c ds_blk_still_there).
    Raises StoreMoved (open the store again) or StoreError."""
    if int(_s(f.attrs.get("format_version", 0))) < 5 or "series" not in f:
        return
    g = f["series"]
    segdir = _s(g.attrs["segment_dir"])
    uuid = _s(f.attrs["store_uuid"])
    top = os.path.join(os.path.dirname(os.path.abspath(f.filename)), segdir)
    segs = g.attrs["segments"] if "segments" in g.attrs else np.zeros((0, 4), np.int64)
    names = ["%s-%d-%d.h5" % (uuid, int(x[0]), int(x[1])) for x in segs]
    for dname, tag in BLOCKED:
        if dname in f and "blocks" in f[dname].attrs:
            names += ["%s-%s-%d-%d.h5" % (uuid, tag, int(x[0]), b) for b, x in enumerate(f[dname].attrs["blocks"])]
    for n in names:
        if not os.path.exists(os.path.join(top, n)):
            if _moved(f):
                raise StoreMoved("%s: published anew while it was read (%s is gone); open the store "
                                 "again" % (f.filename, os.path.join(top, n)))
            raise StoreError("%s: %s is missing; a store is the file plus its directory %s/ (copy or "
                             "move both)" % (f.filename, os.path.join(top, n), segdir))


def read_points(f, ids=None, names=None):
    """{point id: [(name, unit, definition, step, value)]} of the written points of an
    open store file (any format version), ids: only those; names: only these series."""
    out = {}
    if "series" in f and "index" in f["series"]:
        s3 = _Series3(f)
        for pid in (s3.rows if ids is None else ids):
            got = s3.point(int(pid), names)
            if got is not None:
                out[int(pid)] = got
        still_there(f)  # the index and the series were read from the files checked at open
        return out
    pts = f["points"] if "points" in f else {}
    keys = list(pts) if ids is None else ["%06d" % int(i) for i in ids]
    for key in keys:
        if key not in pts:
            continue
        g = pts[key]
        lst = []
        for n in g.attrs.get("series_names", []):
            n = _s(n)
            if names is not None and n not in names:
                continue
            v = g[n + "/value"]
            lst.append((n, _s(v.attrs.get("unit", "")), _s(v.attrs.get("definition", "")),
                        g[n + "/step"][...], v[...]))
        out[int(key)] = lst
    return out


SETTLE_REL = 1e-2  # include/dynsweep/outcome.h DS_SETTLE_REL
SETTLE_FLOOR = 1e-12  # DS_SETTLE_FLOOR: of L_0, changes below it are round-off


def outcome_settled(step, loss, T):
    """include/dynsweep/outcome.h ds_outcome_settled: has the recorded loss settled?"""
    step = np.asarray(step, dtype=np.int64).ravel()
    loss = np.asarray(loss, dtype=np.float64).ravel()
    n = len(step)
    if n < 3 or T < 2 or step[-1] != T:
        return False
    ea = T - (T + 9) // 10
    ia = [i for i in range(n - 1) if step[i] <= ea]
    if not ia:
        return False
    ia = ia[-1]
    ep = step[ia] - (T - step[ia])
    ip = [i for i in range(ia) if step[i] <= ep]
    if not ip:
        return False
    ip = ip[-1]
    L0, LT, La, Lp = loss[0], loss[-1], loss[ia], loss[ip]
    if not all(np.isfinite([L0, LT, La, Lp])):
        return False
    gain, d1, d0 = L0 - LT, La - LT, Lp - La
    if not gain > 0 or abs(d1) > SETTLE_REL * abs(LT) + SETTLE_FLOOR * abs(L0):
        return False
    return d1 <= max(d0, 1e-6 * gain)


def outcome_converged(step, loss, T, tol, final_loss):
    """include/dynsweep/outcome.h ds_outcome_converged: train.tol reached, or settled."""
    if tol > 0 and final_loss < tol:
        return True
    return step is not None and loss is not None and outcome_settled(step, loss, T)


def _s(x):
    """h5py attribute/string value -> str."""
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if isinstance(x, np.ndarray) and x.shape == ():
        return _s(x[()])
    if isinstance(x, np.generic):
        return x.item()
    return x


def _read(path, fn):
    """Open read-only, run fn(file), close; once more if that fails."""
    last = None
    for attempt in range(2):
        try:
            with h5py.File(path, "r") as f:
                return fn(f)
        except (OSError, KeyError, ValueError, RuntimeError) as e:
            last = e
            if not os.path.exists(path):
                break
            time.sleep(0.1)  # a snapshot may be being published: try again once
    if isinstance(last, FileNotFoundError) or not os.path.exists(path):
        raise StoreError("%s: no such file" % path)
    raise StoreError("%s: cannot read the store: %s" % (path, last))


def _yaml_get(doc, dotted):
    cur = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


class Axis:
    """One grid axis: name (alias or path), path, and whether its values are names."""

    def __init__(self, name, path, is_text, labels):
        self.name, self.path, self.is_text, self.labels = name, path, is_text, labels
        self.is_int = False

    def __repr__(self):
        return "Axis(%r, %r%s)" % (self.name, self.path, ", text" if self.is_text else "")


class Store:
    def __init__(self, path):
        self.path = str(path)
        self.refresh()

    # ---- metadata and summary -------------------------------------------------
    def refresh(self):
        """(Re)read attributes, sweep file, grid and summary in one open."""
        def load(f):
            fmt = _s(f.attrs.get("format", b""))
            if fmt != "dynsweep-store":
                raise StoreError("%s: not a dynsweep store (format attribute %r)" % (self.path, fmt))
            ver = int(_s(f.attrs.get("format_version", 0)))
            if ver not in KNOWN_FORMAT_VERSIONS:
                raise StoreError("%s: store format_version %d is not known (this reader: 1-5)"
                                 % (self.path, ver))
            attrs = {k: _s(v) for k, v in f.attrs.items()}
            text = f["sweep/yaml"].asstr()[()] if "sweep/yaml" in f else ""
            names = [str(x) for x in f["grid/axis_names"].asstr()[...]]
            paths = [str(x) for x in f["grid/axis_paths"].asstr()[...]]
            check_segments(f)  # format 5: a missing block would read as fill values
            summ = f["summary"][...]
            if "map" in f:  # a map store: no per-point axis values (docs/store.md, "Map stores")
                vals = np.zeros((0, len(names)))
                coords = [np.asarray(f["map/axes/" + n.replace("/", "_")][...], dtype=np.float64)
                          for n in names]
            else:
                vals = np.asarray(f["grid/axis_values"][...], dtype=np.float64)
                coords = None
            still_there(f)
            return attrs, text, names, paths, vals, summ, coords

        try:
            (self.attrs, self.sweep_yaml, names, paths, self.axis_values,
             self.summary, self.map_coords) = _read(self.path, load)
        except StoreError:
            raise
        except Exception as e:  # a file that is HDF5 but not laid out as a store
            raise StoreError("%s: not a dynsweep store: %s" % (self.path, e))
        self.is_map = self.map_coords is not None
        self.n = len(self.summary)
        self.sweep = None
        if yaml is not None and self.sweep_yaml:
            try:
                self.sweep = yaml.safe_load(self.sweep_yaml)
            except yaml.YAMLError:
                self.sweep = None
        if self.is_map:  # numeric coordinate vectors
            self.axes = [Axis(n, p, False, None) for n, p in zip(names, paths)]
            for ax in self.axes:
                ax.is_int = False
        else:
            self.axes = [self._decode_axis(a, n, p) for a, (n, p) in enumerate(zip(names, paths))]
        self._table = None

    def _grid_entry(self, name, path):
        sw = self.sweep if isinstance(self.sweep, dict) else {}
        grid = dict(sw.get("grid") or {}) if isinstance(sw.get("grid") or {}, dict) else {}
        # `dynsweep run --set grid.AXIS=...` keeps its axes in an overrides: map
        ov = sw.get("overrides")
        for k, v in (ov.items() if isinstance(ov, dict) else []):
            if isinstance(k, str) and k.startswith("grid."):
                k = k[5:]
                for old in [g for g in grid if g == k or ALIASES.get(g, g) == ALIASES.get(k, k)]:
                    del grid[old]
                grid[k] = v
        for k, v in grid.items():
            if k == "replicas":
                continue
            if k == name or k == path or ALIASES.get(k) == path:
                return v
        return None

    def _decode_axis(self, a, name, path):
        entry = self._grid_entry(name, path)
        is_text = isinstance(entry, list) and any(
            isinstance(e, bool) or (isinstance(e, str) and not _isnum(e)) for e in entry)
        labels = None
        if is_text and self.n:
            words = ["true" if e is True else "false" if e is False else str(e).lower()
                     for e in entry]
            # Points enumerate axes in file order, last axis fastest: the combo
            # index gives the position of this axis' value in the list.
            counts = [len(np.unique(self.axis_values[:, j])) for j in range(self.axis_values.shape[1])]
            counts[a] = len(words)
            stride = int(np.prod(counts[a + 1:], dtype=np.int64)) if a + 1 < len(counts) else 1
            idx = (self.summary["combo"].astype(np.int64) // stride) % len(words)
            code_to_word = {}
            ok = True
            for code, i in zip(self.axis_values[:, a], idx):
                if code_to_word.setdefault(code, words[i]) != words[i]:
                    ok = False
                    break
            if ok:
                labels = np.array([code_to_word[c] for c in self.axis_values[:, a]], dtype=object)
            else:
                is_text = False
        ax = Axis(name, path, is_text, labels)
        # integer axes (a list of whole numbers in the sweep file) come back as int64
        ax.is_int = (not is_text and isinstance(entry, list) and len(entry) > 0 and
                     all(isinstance(e, int) and not isinstance(e, bool) for e in entry))
        return ax

    # ---- map stores -------------------------------------------------------------
    def map(self):
        """The arrays of a map store (docs/store.md, "Map stores"), each shaped like
        the grid (axes in sweep order, last axis fastest), as a dict:
        axes (names), coords ({name: values}), outcome (int8: 0 converged,
        1 diverged, 2 catapult, 3 failed, -1 not computed; inferred pixels carry
        their corners' class), computed (bool: trained), inferred (bool: filled from
        a refinement cell's corners), step (int32, -1 unknown), measure,
        final_ratio, peak_ratio (float32, NaN where not computed), raw_outcome
        (the stored byte), refine_levels, refine_axes, steps. The published
        file only (a running writer's journal is not folded in)."""
        if not self.is_map:
            raise StoreError("%s is not a map store (use table() / series())" % self.path)

        def fn(f):
            g = f["map"]
            d = {k: g[k][...] for k in ("outcome", "step", "measure", "final_ratio", "peak_ratio")}
            d["_unknown"] = int(g.attrs.get("step_unknown", -1))
            for k in ("refine_levels", "steps"):
                d[k] = int(g.attrs.get(k, 0))
            d["refine_axes"] = [int(x) for x in g.attrs.get("refine_axes", [-1, -1])]
            return d

        d = _read(self.path, fn)
        raw = d.pop("outcome")
        if d["refine_levels"] > 0 and d["refine_axes"][0] >= 0:
            # the pixels no cell split: their corners' class (dynsweep.refine)
            raw = fill_refined(raw, d["refine_levels"], d["refine_axes"])
        step = d.pop("step")
        unknown = d.pop("_unknown")
        unset = raw == 255
        inferred = (~unset) & ((raw & 0x40) != 0)
        out = {"axes": [a.name for a in self.axes],
               "coords": {a.name: c for a, c in zip(self.axes, self.map_coords)},
               "raw_outcome": raw,
               "outcome": np.where(unset, -1, raw & 0x3F).astype(np.int8),
               "computed": ~unset & ~inferred, "inferred": inferred,
               "step": np.where(step == unknown, -1, step.astype(np.int64)).astype(np.int32)}
        out.update(d)
        return out

    def axis(self, name):
        """The Axis named name (alias or path), or None."""
        for ax in self.axes:
            if name in (ax.name, ax.path) or ALIASES.get(name) == ax.path:
                return ax
        return None

    def param(self, dotted, default=None):
        """Base value of an option from the stored sweep file (not the axis values)."""
        if not isinstance(self.sweep, dict):
            return default
        path = ALIASES.get(dotted, dotted)
        v = _yaml_get(self.sweep, path)
        ov = self.sweep.get("overrides")  # `--set`, applied over the file (docs/sweep-spec.md)
        if isinstance(ov, dict):
            inv = {p: a for a, p in ALIASES.items()}
            parts = path.split(".")
            for k in range(len(parts), 0, -1):  # the key itself, then the groups holding it
                head = ".".join(parts[:k])
                key = head if head in ov else inv.get(head) if inv.get(head) in ov else None
                if key is not None:
                    v = ov[key] if k == len(parts) else _yaml_get(ov[key], ".".join(parts[k:]))
                    break
        return default if v is None else v

    def column(self, name):
        """One column of table() by name: summary field, axis name/path, alias."""
        t = self.table()
        if name in t:
            return t[name]
        ax = self.axis(name)
        if ax is not None:
            return t[ax.name]
        if name in ALIASES and name in t:
            return t[name]
        if name == "point":
            return t["id"]
        raise KeyError("unknown column %r; columns: %s" % (name, ", ".join(t)))

    def table(self):
        """Dict of numpy arrays, one element per point (summary row order):
        id, combo, replica, each grid axis by name (decoded), width, depth, lr,
        init_scale, status (int), status_name (str), steps, final_loss, min_loss,
        final_test_loss, diverged_step, wall_s, rank, reason (str), steps_to_tol
        (float; NaN unless the point finished done with its last loss < train.tol)."""
        if self._table is not None:
            return self._table
        s = self.summary
        t = {}
        for k in ("id", "combo", "replica"):
            t[k] = np.asarray(s[k])
        for a, ax in enumerate(self.axes):
            if ax.is_text:
                t[ax.name] = ax.labels
            elif ax.is_int:
                t[ax.name] = self.axis_values[:, a].astype(np.int64)
            else:
                t[ax.name] = self.axis_values[:, a].copy()
        for k in SUMMARY_FIELDS[3:]:
            if k in t or k not in s.dtype.names:
                continue
            if k == "reason":
                t[k] = np.array([_s(x).rstrip("\0") if isinstance(x, bytes) else str(x)
                                 for x in s[k]], dtype=object)
            else:
                t[k] = np.asarray(s[k])
        for k in s.dtype.names:  # fields added by later format revisions
            if k not in t:
                t[k] = np.asarray(s[k])
        t["status_name"] = np.array([STATUS_NAMES.get(int(x), str(int(x))) for x in s["status"]],
                                    dtype=object)
        tol = self._per_point("train.tol", 0.0)
        reached = (s["status"] == 1) & (tol > 0) & (s["final_loss"] < tol)
        t["steps_to_tol"] = np.where(reached, s["steps"].astype(np.float64), np.nan)
        self._table = t
        return t

    def normalised(self):
        """The normalised learning-rate axes, float64 arrays (one value per point, NaN
        where undefined: also pending and running points), the same rules as
        `dynsweep ls/export/phase` (docs/analysis.md "Normalised axes"):
        lambda0 = column 0 of ntk/top at step 0 if the point recorded it at step 0,
        else column 0 of hessian/top at step 0, else NaN; eta_crit0 = ntk/critical_lr
        at step 0 if recorded, else 2/lambda0 when lambda0 came from hessian/top, else
        NaN; lr_lambda0 = lr * lambda0; lr_eta_crit = lr / eta_crit0."""
        want = ("ntk/top", "ntk/critical_lr", "hessian/top")
        ids = [int(x) for x in self.summary["id"]]

        def fn(f):
            return read_points(f, ids, want)
        got = _read(self.path, fn) if self.n else {}
        lam = np.full(self.n, np.nan)
        crit = np.full(self.n, np.nan)
        for i, pid in enumerate(ids):
            if int(self.summary["status"][i]) in (STATUS_CODES["pending"], STATUS_CODES["running"]):
                continue  # as the C side: a pending or running point has no values yet
            at0 = {}
            for name, _, _, step, val in got.get(pid, []):
                hit = np.nonzero(np.asarray(step) == 0)[0]
                if len(hit):
                    v = np.asarray(val, dtype=np.float64).reshape(len(step), -1)
                    at0[name] = float(v[hit[0], 0])
            if "ntk/top" in at0:
                lam[i] = at0["ntk/top"]
            elif "hessian/top" in at0:
                lam[i] = at0["hessian/top"]
            if "ntk/critical_lr" in at0:
                crit[i] = at0["ntk/critical_lr"]
            elif "ntk/top" not in at0 and "hessian/top" in at0:
                crit[i] = 2.0 / lam[i]
        lr = self.table()["lr"].astype(np.float64)
        # issue 24: the absolute learning rate eta (lr_units lambda0: the grid's lr is
        # eta * lambda_0): lr, or the stored series eta, or lr / ntk/top at step 0 in
        # stores before it; lambda0 of such a point without ntk/top = lr / eta
        units = self.per_point_text("optimizer.lr_units", "absolute")
        lam_units = np.array([u == "lambda0" for u in units], dtype=bool)
        eta = np.where(lam_units, np.nan, lr)
        eta[np.isin(np.asarray(self.summary["status"]), (STATUS_CODES["pending"], STATUS_CODES["running"]))] = np.nan
        if lam_units.any():
            got_eta = _read(self.path, lambda f: read_points(f, [ids[i] for i in np.nonzero(lam_units)[0]],
                                                             ("eta",)))
            for i in np.nonzero(lam_units)[0]:
                if int(self.summary["status"][i]) in (STATUS_CODES["pending"], STATUS_CODES["running"]):
                    continue
                for name, _, _, step, val in got_eta.get(ids[i], []):
                    hit = np.nonzero(np.asarray(step) == 0)[0]
                    if len(hit):
                        eta[i] = float(np.asarray(val, dtype=np.float64).ravel()[hit[0]])
                had_ntk = self._had_ntk(i, got, ids)
                if np.isnan(eta[i]) and had_ntk:
                    eta[i] = lr[i] / lam[i]  # ntk/top at step 0: the NTK the rates were divided by
                if not had_ntk and np.isfinite(eta[i]) and eta[i] > 0:
                    lam[i] = lr[i] / eta[i]  # the NTK eigenvalue the rates were divided by
                    crit[i] = np.nan
        return {"lambda0": lam, "eta_crit0": crit, "lr_lambda0": eta * lam,
                "lr_eta_crit": eta / crit, "eta": eta}

    @staticmethod
    def _had_ntk(i, got, ids):
        return any(name == "ntk/top" and len(np.nonzero(np.asarray(step) == 0)[0])
                   for name, _, _, step, _ in got.get(ids[i], []))

    def outcome_codes(self):
        """The stored outcome codes (worker.h DS_OUT_*), with every done row of code 0
        (a store written before issue 24: "did not diverge") re-classified by the
        rule of include/dynsweep/outcome.h from its stored loss series, train.steps
        and train.tol: 6 converged or 5 unconverged (as `dynsweep ls` does)."""
        s = self.summary
        if "outcome" in s.dtype.names:
            code = np.asarray(s["outcome"]).astype(np.int64)
        else:
            code = np.array([{0: 4, 1: 0, 2: 1, 3: 3, 4: 4}.get(int(x), -1) for x in s["status"]],
                            dtype=np.int64)
        legacy = np.nonzero((np.asarray(s["status"]) == 1) & (code == 0))[0]
        if not len(legacy):
            return code
        tol = self._per_point("train.tol", 0.0)
        steps = self._per_point("train.steps", 1000.0)
        ids = [int(x) for x in s["id"]]
        got = _read(self.path, lambda f: read_points(f, [ids[i] for i in legacy], ("loss",)))
        for i in legacy:
            ser = [(st, v) for name, _, _, st, v in got.get(ids[i], []) if name == "loss"]
            step, val = (ser[0] if ser else (None, None))
            code[i] = 6 if outcome_converged(step, val, int(steps[i]), float(tol[i]),
                                             float(s["final_loss"][i])) else 5
        return code

    def _per_point(self, dotted, default):
        """Per-point numeric value of an option: the axis if it is one, else the base value."""
        ax = self.axis(dotted)
        if ax is not None and not ax.is_text:
            return self.axis_values[:, self.axes.index(ax)]
        try:
            v = float(self.param(dotted, default))
        except (TypeError, ValueError):
            v = default
        return np.full(self.n, v, dtype=np.float64)

    def per_point_text(self, dotted, default=None):
        """Per-point text value of an (enum) option: the axis if it is one, else the base."""
        ax = self.axis(dotted)
        if ax is not None:
            col = ax.labels if ax.is_text else self.axis_values[:, self.axes.index(ax)]
            return np.array([str(x) for x in col], dtype=object)
        v = self.param(dotted, default)
        return np.array([None if v is None else str(v)] * self.n, dtype=object)

    def records(self):
        """table() as one numpy structured array (text columns as unicode)."""
        t = self.table()
        cols, dtypes = [], []
        for k, v in t.items():
            if v.dtype == object:
                v = v.astype(str)
            cols.append(v)
            dtypes.append((k, v.dtype))
        out = np.empty(self.n, dtype=dtypes)
        for (k, _), v in zip(dtypes, cols):
            out[k] = v
        return out

    def params(self, i):
        """Grid parameters of summary row i: {axis name: value, 'replica': r, 'id': id}."""
        p = {}
        for a, ax in enumerate(self.axes):
            v = self.axis_values[i, a]
            p[ax.name] = ax.labels[i] if ax.is_text else int(v) if ax.is_int else float(v)
        p["replica"] = int(self.summary["replica"][i])
        p["id"] = int(self.summary["id"][i])
        return p

    def select(self, where=None):
        """Row indices matching where: {column: value | callable(array) -> bool array}."""
        mask = np.ones(self.n, dtype=bool)
        for k, v in (where or {}).items():
            col = self.column(k)
            if callable(v):
                mask &= np.asarray(v(col), dtype=bool)
            elif k == "status" and isinstance(v, str):
                mask &= col == STATUS_CODES[v]
            elif col.dtype == object:
                mask &= col == str(v)
            else:
                mask &= np.isclose(col.astype(np.float64), float(v), rtol=1e-12, atol=0)
        return np.nonzero(mask)[0]

    # ---- series -----------------------------------------------------------------
    def series_names(self):
        """Names of the series recorded by any written point (recorded order, union)."""
        def fn(f):
            names = []
            if "series" in f and "index" in f["series"]:
                s3 = _Series3(f)
                for pid in sorted(s3.rows):
                    for i in s3.rows[pid]:
                        k = int(s3.index[i]["kind"])
                        if k >= 0 and s3.names[k] not in names:
                            names.append(s3.names[k])
                return names
            if "points" not in f:
                return names
            for key in f["points"]:
                g = f["points"][key]
                for n in g.attrs.get("series_names", []):
                    n = _s(n)
                    if n not in names:
                        names.append(n)
            return names
        return _read(self.path, fn)

    def point_series(self, point_id):
        """{series name: (step int64 array, value array (n,) or (n, ncols))} of one point;
        {} if the point was not written yet."""
        def fn(f):
            got = read_points(f, [int(point_id)]).get(int(point_id), [])
            return {n: (step, val) for n, _, _, step, val in got}
        return _read(self.path, fn)

    def series(self, name, where=None):
        """[(params dict, step array, value array)] for every written point that has
        the series name, in point order; where as in select()."""
        rows = self.select(where)
        ids = [int(self.summary["id"][i]) for i in rows]

        def fn(f):
            out = []
            got = read_points(f, ids)
            for i, pid in zip(rows, ids):
                for n, _, _, step, val in got.get(pid, []):
                    if n == name:
                        out.append((self.params(i), step, val))
                        break
            return out
        return _read(self.path, fn)

    def series_unit(self, name):
        """(unit, definition) of a series from the first point that has it, or (None, None)."""
        def fn(f):
            if "series" in f and "index" in f["series"]:
                s3 = _Series3(f)
                used = set(int(k) for k in s3.index["kind"][s3.index["point"] >= 0])
                for k, n in enumerate(s3.names):
                    if n == name and k in used:
                        return s3.units[k], s3.defs[k]
                return None, None
            for key in f.get("points", {}):
                g = f["points"][key]
                if name + "/value" in g:
                    a = g[name + "/value"].attrs
                    return _s(a.get("unit", "")), _s(a.get("definition", ""))
            return None, None
        return _read(self.path, fn)


def _isnum(s):
    try:
        float(s)
        return True
    except (TypeError, ValueError):
        return False


def open_store(path):
    return Store(path)
