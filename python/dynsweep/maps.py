"""dynsweep.maps -- trainability maps: a metric over two grid axes as a 2-D numpy
array with its coordinates, the trainability-fractal study's convergence measure,
the boundary between converged and diverged pixels and its box-counting dimension
(Sohl-Dickstein 2024, arXiv 2402.06184; docs/maps.md; docs/analysis.md "Maps").

    import dynsweep, dynsweep.maps as maps
    st = dynsweep.ArrayStore("map.h5")             # the numpy reader
    m = maps.grid_map(st, "lr_in", "lr_out", "measure")
    m.values                  # (len(m.y), len(m.x)) float array, NaN = no point
    b = maps.boundary(m.values)                    # 2x2 blocks of mixed sign
    fit = maps.box_counting(b)                     # fit.dimension, fit.sizes, ...

numpy only (no pandas, no matplotlib); tools/dynsweep-map draws the image.
"""
from collections import namedtuple

import numpy as np

from .refine import fill_refined  # noqa: F401  (dynsweep.maps.fill_refined, as before)
from .store import StoreError

#: v_t = L_t / L_0 is capped at this (and non-finite values become it)
MEASURE_CAP = 1e6
#: converged when the mean of the last this-many v_t is below 1
MEASURE_TAIL = 20


def convergence_measure(loss, cap=MEASURE_CAP, tail=MEASURE_TAIL):
    """The study's convergence measure of one loss series L_0..L_{T-1}:
    v_t = L_t / L_0 (non-finite -> cap, above cap -> cap); converged when the mean
    of the last `tail` v_t is below 1; measure = -sum_t v_t if converged, else
    +sum_t 1/v_t. Negative: converged (the larger |m|, the slower); positive:
    diverged (the larger, the slower it blew up). Non-finite values count as the
    cap, the study's stated rule: its notebook's v*fin + cap*(1-fin) gives NaN
    there (inf*0), which would make the measure NaN (docs/maps.md, "The measure
    at the cap"). A map's record (src/worker/maprec.c) is this over all T steps."""
    loss = np.asarray(loss, dtype=np.float64)
    if loss.size == 0:
        return np.nan
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = loss / loss[0]
    v = np.where(np.isfinite(v), v, cap)
    v = np.minimum(v, cap)
    if np.mean(v[-tail:]) < 1:
        return -float(np.sum(v))
    with np.errstate(divide="ignore"):
        return float(np.sum(1.0 / v))


Map = namedtuple("Map", "values x y xname yname metric computed")
Map.__doc__ = """A metric over two axes: values[j, i] is the point at (x[i], y[j]); NaN
where no point (or no value); computed: bool array, True where a point ran."""


MAP_METRICS = ("outcome", "measure", "step", "final_ratio", "peak_ratio", "computed")

#: the values of an "outcome" map, by class: a map store's pixel classes are 0-3
#: (include/dynsweep/map.h, unchanged); a row store's named outcomes (docs/store.md
#: "Outcome", as `dynsweep ls` prints them) take the same values for the same
#: classes and 4 unconverged, 5 plateaus (converged with plateaus). NaN: pending.
MAP_OUTCOMES = ("converged", "diverged", "catapult", "failed", "unconverged", "plateaus")


def row_outcomes(st, rows=None):
    """The outcome-map value (MAP_OUTCOMES index) of summary rows `rows` (default
    all) of a row store: the named outcome of docs/store.md "Outcome" from status,
    the stored code (an older store's code 0 re-classified by the rule of
    include/dynsweep/outcome.h, Store.outcome_codes) and the plateau count; NaN for
    pending and running points."""
    s = st.summary
    rows = np.arange(st.n) if rows is None else np.asarray(rows)
    status = np.asarray(s["status"])[rows]
    code = np.asarray(st.outcome_codes())[rows]
    pl = np.asarray(s["plateaus"])[rows] if "plateaus" in s.dtype.names else np.zeros(len(rows))
    out = np.full(len(rows), np.nan)
    out[status == 2] = MAP_OUTCOMES.index("diverged")
    out[status == 3] = MAP_OUTCOMES.index("failed")
    done = status == 1
    out[done] = np.where(code[done] == 2, MAP_OUTCOMES.index("catapult"),
                         np.where(code[done] == 5, MAP_OUTCOMES.index("unconverged"),
                                  np.where(pl[done] >= 1, MAP_OUTCOMES.index("plateaus"),
                                           MAP_OUTCOMES.index("converged"))))
    return out


def store_map(st, x, y, metric="measure", at=None):
    """grid_map of a map store (st.is_map): the metric (MAP_METRICS) over axes x, y
    read from the /map arrays. Other axes of more than one value are fixed at
    index at[name] (default 0). outcome: the class code (inferred pixels carry
    their corners' class), NaN where not computed; computed: 1 trained, 0.5
    inferred, 0 not computed."""
    if metric not in MAP_METRICS:
        raise StoreError("%s: metric %r of a map store is one of %s"
                         % (st.path, metric, ", ".join(MAP_METRICS)))
    names = [a.name for a in st.axes]
    ix, iy = [names.index(a.name) if a is not None else None for a in (st.axis(x), st.axis(y))]
    if ix is None or iy is None or ix == iy:
        raise StoreError("%s: %r, %r are not two grid axes; axes: %s"
                         % (st.path, x, y, ", ".join(names)))
    m = st.map()
    have = ~(m["raw_outcome"] == 255)
    if metric == "outcome":
        v = np.where(have, m["outcome"], np.nan)
    elif metric == "computed":
        v = np.where(m["computed"], 1.0, np.where(m["inferred"], 0.5, 0.0))
    elif metric == "step":
        v = np.where(have & (m["step"] >= 0), m["step"], np.nan)
    else:
        v = np.asarray(m[metric], dtype=np.float64)
    sel = []
    for a, n in enumerate(names):
        k = (at or {}).get(n, 0) if a not in (ix, iy) else slice(None)
        sel.append(k)
    v = np.asarray(v, dtype=np.float64)[tuple(sel)]
    comp = m["computed"][tuple(sel)]
    if ix < iy:  # rows must be y
        v, comp = v.T, comp.T
    return Map(v, st.map_coords[ix], st.map_coords[iy], names[ix], names[iy], metric, comp)


def _axis_values(st, name):
    ax = st.axis(name)
    if ax is None:
        raise StoreError("%s: %r is not a grid axis; axes: %s"
                         % (st.path, name, ", ".join(a.name for a in st.axes)))
    if ax.is_text:
        raise StoreError("%s: axis %r is not numeric" % (st.path, name))
    return ax, st.column(name).astype(np.float64)


def point_measures(st, rows):
    """The convergence measure of summary rows `rows` from their stored loss
    series (NaN for points not written or without a loss series). The measure
    needs the loss at every step: a series recorded every k steps gives the sum
    over its records only (record.series: [loss], record.every: 1 for maps)."""
    ids = [int(st.summary["id"][i]) for i in rows]
    out = np.full(len(rows), np.nan)
    got = {p["id"]: v for p, _, v in st.series("loss")}
    for k, pid in enumerate(ids):
        if pid in got:
            out[k] = convergence_measure(np.asarray(got[pid], dtype=np.float64).ravel())
    return out


_WHERE_OPS = ("<=", ">=", "!=", "==", "=", "<", ">")


def _where_column(st, name):
    """(label, values, is_text) of a --where column: a grid axis (text axes by their
    words), status/outcome by name, or any numeric column of table()."""
    ax = st.axis(name)
    if ax is not None:
        if getattr(st, "is_map", False):
            return ax.name, None, ax.is_text
        if ax.is_text:
            lab = ax.labels if ax.labels is not None else st.column(ax.name)
            return ax.name, np.array([str(v).lower() for v in lab], dtype=object), True
        return ax.name, np.asarray(st.column(ax.name), dtype=np.float64), False
    if getattr(st, "is_map", False):
        raise StoreError("%s: --where on a map store fixes grid axes; %r is not one (axes: %s)"
                         % (st.path, name, ", ".join(a.name for a in st.axes)))
    if name == "status":
        names = {0: "pending", 1: "done", 2: "diverged", 3: "failed", 4: "running"}
        return name, np.array([names.get(int(v), str(v)) for v in st.column("status")], dtype=object), True
    if name == "outcome":
        o = row_outcomes(st)
        return name, np.array(["pending" if np.isnan(v) else MAP_OUTCOMES[int(v)] for v in o],
                              dtype=object), True
    try:
        col = st.column(name)
    except KeyError:
        raise StoreError("%s: --where: unknown column %r; grid axes: %s"
                         % (st.path, name, ", ".join(a.name for a in st.axes)))
    return name, np.asarray(col, dtype=np.float64), False


def parse_where(st, text):
    """The conditions of --where 'NAME OP VALUE,...' (as `dynsweep ls --where`:
    OP one of = != < <= > >=, == for =; all must hold; numbers compare with a
    relative tolerance of 1e-12, and = / != on a numeric column match the nearest
    value the store has when it is within 1% of it; text columns (enum axes,
    status, outcome) compare by word with = / !=). Returns [(name, op, value)]
    with numeric values resolved to the stored value; raises StoreError (bad
    input) for an unknown column, a non-number, an ordering operator on text, or
    a value no point has."""
    out = []
    for cond in [c.strip() for c in (text or "").split(",") if c.strip()]:
        for op in _WHERE_OPS:
            k = cond.find(op)
            if k > 0:
                break
        else:
            raise StoreError("--where: %r is not NAME OP VALUE (OP one of = != < <= > >=)" % cond)
        name, val = cond[:k].strip(), cond[k + len(op):].strip()
        op = "=" if op == "==" else op
        label, col, is_text = _where_column(st, name)
        if getattr(st, "is_map", False):
            ax = st.axis(name)
            coords = np.asarray(st.map_coords[[a.name for a in st.axes].index(ax.name)])
            if op != "=":
                raise StoreError("--where on a map store fixes an axis to one value: %s=VALUE" % label)
            if ax.is_text:
                words = [str(w).lower() for w in (ax.labels if ax.labels is not None else coords)]
                if val.lower() not in words:
                    raise StoreError("--where: no pixel has %s = %s; its values: %s" % (label, val, ", ".join(words)))
                out.append((label, "=", words.index(val.lower())))
                continue
            try:
                v = float(val)
            except ValueError:
                raise StoreError("--where: %s is numeric, not %r" % (label, val))
            j = int(np.argmin(np.abs(coords - v)))
            if abs(coords[j] - v) > 0.01 * max(abs(v), abs(coords[j])):
                raise StoreError("--where: no pixel has %s = %s (nor within 1%%); its values: %s"
                                 % (label, val, ", ".join("%g" % c for c in coords)))
            out.append((label, "=", j))
            continue
        if is_text:
            if op not in ("=", "!="):
                raise StoreError("--where: %s is text; only = and != compare it" % label)
            have = sorted(set(col.tolist()))
            if label not in ("status", "outcome") and val.lower() not in have:
                raise StoreError("--where: no point has %s = %s; its values: %s" % (label, val, ", ".join(have)))
            out.append((label, op, val.lower()))
            continue
        try:
            v = float(val)
        except ValueError:
            raise StoreError("--where: %s is numeric, not %r" % (label, val))
        if op in ("=", "!="):
            have = np.unique(col[np.isfinite(col)])
            if have.size:
                j = int(np.argmin(np.abs(have - v)))
                if abs(have[j] - v) <= 0.01 * max(abs(v), abs(have[j])):
                    v = float(have[j])
                elif op == "=":
                    raise StoreError("--where: no point has %s = %s (nor within 1%%); its values: %s"
                                     % (label, val, ", ".join("%g" % h for h in have[:20])))
        out.append((label, op, v))
    return out


def where_mask(st, conds):
    """Bool mask over the summary rows of a row store for parse_where's conditions."""
    mask = np.ones(st.n, dtype=bool)
    for name, op, v in conds:
        _, col, is_text = _where_column(st, name)
        if is_text:
            m = col == v
        else:
            tol = 1e-12 * max(abs(v), 1e-300)
            eq = np.abs(col - v) <= tol
            m = {"=": eq, "!=": ~eq, "<": (col < v) & ~eq, "<=": (col <= v) | eq,
                 ">": (col > v) & ~eq, ">=": (col >= v) | eq}[op]
        mask &= (~m if (is_text and op == "!=") else m)
    return mask


def grid_map(st, x, y, metric="measure", replica=0, where=None):
    """Map of `metric` over grid axes x (columns) and y (rows) of store st (a
    dynsweep.ArrayStore / dynsweep.store.Store). metric: "measure" (the
    convergence measure, from the loss series), "outcome" (the named outcome as a
    MAP_OUTCOMES index: 0 converged, 1 diverged, 2 catapult, 3 failed, 4 unconverged,
    5 plateaus; NaN pending; row_outcomes) or any numeric
    column of table() (final_loss, peak_ratio, ...). Other axes must have one value
    (a map is a 2-D slice) among the points that meet `where` (a --where string,
    parse_where, or its parsed conditions); replica selects the replica. A map
    store (st.is_map) is read from its arrays (store_map; where fixes its other
    axes: NAME=VALUE)."""
    conds = parse_where(st, where) if isinstance(where, str) else (where or [])
    if getattr(st, "is_map", False):
        return store_map(st, x, y, metric, at={n: j for n, _, j in conds})
    xa, xv = _axis_values(st, x)
    ya, yv = _axis_values(st, y)
    sel = where_mask(st, conds)
    if not sel.any():
        raise StoreError("%s: no point matches --where %s" % (st.path, where if isinstance(where, str) else conds))
    for ax in st.axes:
        if ax.name not in (xa.name, ya.name) and len(np.unique(st.column(ax.name)[sel])) > 1:
            raise StoreError("%s: axis %r has several values; a map is over two axes "
                             "(x %r, y %r): pick one with --where %s=VALUE"
                             % (st.path, ax.name, x, y, ax.name))
    rows = np.nonzero((st.column("replica") == replica) & sel)[0]
    xs, ys = np.unique(xv[rows]), np.unique(yv[rows])
    ix = np.searchsorted(xs, xv[rows])
    iy = np.searchsorted(ys, yv[rows])
    status = np.asarray(st.column("status"))[rows]
    written = (status >= 1) & (status <= 3)
    if metric == "measure":
        vals = point_measures(st, rows)
    elif metric == "outcome":
        vals = np.where(written, row_outcomes(st, rows), np.nan)
    else:
        vals = np.asarray(st.column(metric), dtype=np.float64)[rows]
        vals = np.where(written, vals, np.nan)
    out = np.full((len(ys), len(xs)), np.nan)
    comp = np.zeros((len(ys), len(xs)), dtype=bool)
    out[iy, ix] = vals
    comp[iy, ix] = written
    return Map(out, xs, ys, x, y, metric, comp)


def boundary(values):
    """Boundary pixels of a map of signed values (the convergence measure: < 0
    converged, > 0 diverged): a (ny-1) x (nx-1) bool array, True for each 2x2 block
    whose finite values do not all have the same sign. Blocks with NaN count only
    their finite values."""
    s = np.sign(np.asarray(values, dtype=np.float64))
    blocks = np.stack([s[:-1, :-1], s[:-1, 1:], s[1:, :-1], s[1:, 1:]])
    pos = np.any(blocks > 0, axis=0)
    neg = np.any(blocks < 0, axis=0)
    return pos & neg


Fit = namedtuple("Fit", "dimension sizes counts fit_sizes r2")
Fit.__doc__ = """Box counting: dimension = slope of log N(s) against log(1/s) over
fit_sizes (box edges in pixels); sizes, counts: every size counted; r2: of the fit."""


def box_counting(mask, fit=None):
    """Box-counting dimension of the True pixels of a 2-D bool array. Boxes of s x
    s pixels, s = 1, 2, 4, ... up to the shorter side; N(s) = boxes holding at least
    one True pixel. fit: (smin, smax) in pixels, the sizes the slope is fitted over
    (default: 2 up to a quarter of the shorter side, or every size when the map is
    smaller than 16 pixels, since the smallest boxes see pixel noise and the
    largest too few boxes)."""
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2 or not m.any():
        raise ValueError("box counting needs a 2-D mask with at least one True pixel")
    short = min(m.shape)
    sizes, counts = [], []
    s = 1
    while s <= short:
        ny, nx = -(-m.shape[0] // s), -(-m.shape[1] // s)
        pad = np.zeros((ny * s, nx * s), dtype=bool)
        pad[:m.shape[0], :m.shape[1]] = m
        n = pad.reshape(ny, s, nx, s).any(axis=(1, 3)).sum()
        sizes.append(s)
        counts.append(int(n))
        s *= 2
    sizes, counts = np.array(sizes), np.array(counts)
    if fit is None:
        fit = (2, max(2, short // 4)) if short >= 16 else (1, short)
    sel = (sizes >= fit[0]) & (sizes <= fit[1])
    if sel.sum() < 2:
        raise ValueError("box counting: fewer than two box sizes in the fit range %s" % (fit,))
    lx, ly = np.log(1.0 / sizes[sel]), np.log(counts[sel])
    slope, icpt = np.polyfit(lx, ly, 1)
    res = ly - (slope * lx + icpt)
    tot = ly - ly.mean()
    r2 = 1 - float(res @ res) / float(tot @ tot) if float(tot @ tot) > 0 else 1.0
    return Fit(float(slope), sizes, counts, sizes[sel], r2)


def rank_rescale(values):
    """The study's colour scale: each value replaced by its rank, as a uniform
    spread over (-1, 0) for the negatives and (0, 1) for the positives (the sign
    kept: converged blue, diverged red); zeros stay 0, NaN stays NaN."""
    v = np.asarray(values, dtype=np.float64)
    out = np.full(v.shape, np.nan)
    flat, res = v.ravel(), out.ravel()
    for sign in (-1, 1):
        idx = np.nonzero(np.sign(flat) == sign)[0]
        if idx.size:
            order = np.argsort(np.abs(flat[idx]), kind="stable")
            r = np.empty(idx.size)
            r[order] = (np.arange(idx.size) + 0.5) / idx.size
            res[idx] = sign * r
    res[flat == 0] = 0
    return out
