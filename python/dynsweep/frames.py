"""dynsweep.frames -- a store as pandas DataFrames and an xarray Dataset.

dynsweep.open(path) returns a Store of this module: summary() and series()
return DataFrames (python3-pandas), to_xarray() and grid() xarray objects
(python3-xarray). Everything else (table(), records(), select(), params(),
point_series(), axes, attrs, sweep_yaml, ...) is the numpy reader's
(dynsweep.store.Store, also Store.raw), delegated unchanged.
"""

import numpy as np

from . import store as _store
from ._deps import require

#: the stored outcome codes of /summary (include/dynsweep/worker.h DS_OUT_*): column
#: outcome_code
OUTCOME_NAMES = {0: "converged", 1: "diverged", 2: "catapult", 3: "failed", 4: "unfinished"}
#: the named outcome, as `dynsweep ls/export/phase` print it (include/dynsweep/analysis.h,
#: docs/store.md "Outcome"): derived from status, the stored code and the plateau count
OUTCOME_CATEGORIES = ["converged", "catapult", "diverged", "plateaus", "failed", "pending",
                      "unconverged"]
STATUS_CATEGORIES = [_store.STATUS_NAMES[i] for i in range(len(_store.STATUS_NAMES))]
# status -> outcome for stores written before the outcome fields existed
_OUTCOME_OF_STATUS = {0: 4, 1: 0, 2: 1, 3: 3, 4: 4}
# optional summary fields: value when a store lacks them (attempts: 0 as HDF5 fills it)
_DEFAULTS = (("event_step", np.int64, -1), ("peak_ratio", np.float64, np.nan),
             ("plateaus", np.int32, 0), ("plateau_end", np.int64, -1),
             ("team_size", np.int32, 0), ("attempts", np.int32, 0))


def _pd():
    return require("pandas", "dynsweep (summary(), series())")


def _xr():
    return require("xarray", "dynsweep (to_xarray(), grid())")


def open(path):  # noqa: A001 - dynsweep.open, like h5py.File / xarray.open_dataset
    """Open a store: a Store of DataFrame/Dataset methods (reads the summary now)."""
    return Store(path)


class Store:
    """A dynsweep store for pandas/xarray; see the module docstring."""

    def __init__(self, path):
        self.raw = _store.Store(path)

    def __getattr__(self, name):
        if name == "raw":
            raise AttributeError(name)
        return getattr(self.raw, name)

    def __repr__(self):
        return "<dynsweep.Store %r: %d points, axes %s>" % (
            self.raw.path, self.raw.n, [a.name for a in self.raw.axes])

    def refresh(self):
        """Re-read the summary (a running sweep)."""
        self.raw.refresh()

    # ---- the summary ------------------------------------------------------------
    def columns(self):
        """The columns of summary() as {name: numpy array} (no pandas needed): status
        and outcome as int codes (outcome indexes OUTCOME_CATEGORIES)."""
        return self._columns()

    def _columns(self):
        """{column: numpy array} in summary order; status and outcome as int codes."""
        raw = self.raw
        s, t = raw.summary, raw.table()
        names = s.dtype.names
        c = {"id": s["id"].astype(np.int64), "combo": s["combo"].astype(np.int64),
             "replica": s["replica"].astype(np.int64)}
        for ax in raw.axes:
            c[ax.name] = t[ax.name]
        for k in ("width", "depth", "lr", "init_scale"):
            if k not in c:
                c[k] = np.asarray(s[k])
        c["status"] = s["status"].astype(np.int64)
        for k in ("steps", "final_loss", "min_loss", "final_test_loss", "diverged_step",
                  "wall_s", "rank"):
            c[k] = np.asarray(s[k])
        # stored codes; a done row of code 0 (stores before issue 24, or before the
        # outcome fields) re-classified by the rule of include/dynsweep/outcome.h
        c["outcome"] = raw.outcome_codes()
        for k, dt, dflt in _DEFAULTS:
            c[k] = np.asarray(s[k]) if k in names else np.full(raw.n, dflt, dtype=dt)
        # the named outcome (same rule as ds_outcome_category): pending/running ->
        # pending, failed, diverged; done: catapult (code 2), unconverged (code 5),
        # else plateaus (>= 1 plateau), else converged
        st, stored, pl = c["status"], c["outcome"], np.asarray(c["plateaus"])
        cat = np.full(len(st), OUTCOME_CATEGORIES.index("pending"), dtype=np.int64)
        cat[st == 3] = OUTCOME_CATEGORIES.index("failed")
        cat[st == 2] = OUTCOME_CATEGORIES.index("diverged")
        done = st == 1
        cat[done] = np.where(stored[done] == 2, OUTCOME_CATEGORIES.index("catapult"),
                             np.where(stored[done] == 5, OUTCOME_CATEGORIES.index("unconverged"),
                                      np.where(pl[done] >= 1, OUTCOME_CATEGORIES.index("plateaus"),
                                               OUTCOME_CATEGORIES.index("converged"))))
        c["outcome"], c["outcome_code"] = cat, stored
        c["reason"] = t["reason"]
        c["steps_to_tol"] = t["steps_to_tol"]
        c.update(raw.normalised())  # lambda0, eta_crit0, lr_lambda0, lr_eta_crit, eta
        for k in names:  # fields of later format revisions
            if k not in c:
                c[k] = np.asarray(s[k])
        return c

    def summary(self):
        """pandas DataFrame, one row per point in store order: id, combo, replica, the
        grid axes by name (numbers, or names for enum/bool axes), width, depth, lr,
        init_scale (unless axes), status (Categorical: pending done diverged failed
        running), steps, final_loss, min_loss, final_test_loss, diverged_step, wall_s,
        rank, outcome (Categorical: converged catapult diverged plateaus failed pending
        unconverged, the rule of docs/store.md "Outcome"; a done row of code 0, an older
        store's, re-classified by it), outcome_code (the stored DS_OUT_* code, or the
        re-classified 5/6),
        event_step, peak_ratio, plateaus, plateau_end, team_size, attempts (0 in old
        stores), reason (str), steps_to_tol (NaN unless reached), then the normalised
        learning rate: lambda0, eta_crit0, lr_lambda0, lr_eta_crit (float64, NaN where
        the point did not record ntk/top or hessian/top at step 0), and eta, the
        absolute learning rate (with optimizer.lr_units: lambda0 the grid's lr is
        eta * lambda0); rules in docs/analysis.md "Normalised axes", =
        dynsweep.store.Store.normalised()."""
        pd = _pd()
        c = self._columns()
        c["status"] = pd.Categorical.from_codes(_codes(c["status"], STATUS_CATEGORIES),
                                                categories=STATUS_CATEGORIES)
        c["outcome"] = pd.Categorical.from_codes(_codes(c["outcome"], OUTCOME_CATEGORIES),
                                                 categories=OUTCOME_CATEGORIES)
        df = pd.DataFrame(c)
        df["reason"] = df["reason"].astype(str)
        return df

    # ---- the grid -------------------------------------------------------------------
    def coords(self):
        """{dim: coordinate values}: each grid axis (numbers ascending; names in the
        order of the sweep file), then replica."""
        raw, c = self.raw, self._columns()
        out = {}
        for ax in raw.axes:
            v = c[ax.name]
            if ax.is_text:
                out[ax.name] = np.array(list(dict.fromkeys(v.tolist())), dtype=object)
            else:
                out[ax.name] = np.unique(v)
        out["replica"] = np.unique(c["replica"])
        return out

    def to_xarray(self):
        """xarray Dataset with dims = the grid axes and replica, coordinates = their
        values, one variable per summary column that is not a dim. Cells without a
        point: NaN for reals and counts (their variables become float64), -1 for id,
        combo, status, outcome, "" for reason. status and outcome are int codes
        with CF flag_values / flag_meanings attributes. A map store: dims = its grid
        axes, variables = the arrays of raw.map() (docs/store.md, "Map stores")."""
        xr = _xr()
        if getattr(self.raw, "is_map", False):
            m = self.raw.map()
            dims = m["axes"]
            ds = xr.Dataset({k: (dims, m[k]) for k in ("outcome", "computed", "inferred", "step",
                                                       "measure", "final_ratio", "peak_ratio")},
                            coords={d: m["coords"][d] for d in dims})
            ds["outcome"].attrs.update(flag_values=[-1, 0, 1, 2, 3],
                                       flag_meanings="unset converged diverged catapult failed")
            ds.attrs.update(refine_levels=m["refine_levels"], steps=m["steps"])
            return ds
        raw, c = self.raw, self._columns()
        coords = self.coords()
        dims = list(coords)
        shape = tuple(len(v) for v in coords.values())
        pos = []
        for d in dims:
            look = {v: i for i, v in enumerate(coords[d].tolist())}
            pos.append(np.array([look[v] for v in c[d].tolist()], dtype=np.int64))
        flat = np.ravel_multi_index(pos, shape) if pos and raw.n else np.zeros(0, np.int64)
        if len(np.unique(flat)) != len(flat):
            raise _store.StoreError("%s: two points share grid values and replica" % raw.path)
        full = len(flat) == int(np.prod(shape, dtype=np.int64))
        data = {}
        for k, v in c.items():
            if k in coords:
                continue
            if v.dtype == object:
                fill, dt = "", object
            elif k in ("id", "combo", "status", "outcome"):
                fill, dt = -1, np.int64
            elif full:
                fill, dt = 0, v.dtype
            else:
                fill, dt = np.nan, np.float64
            a = np.full(int(np.prod(shape, dtype=np.int64)), fill, dtype=dt)
            a[flat] = v
            data[k] = (dims, a.reshape(shape))
        ds = xr.Dataset(data, coords={d: coords[d] for d in dims})
        ds["status"].attrs.update(flag_values=np.arange(len(STATUS_CATEGORIES)),
                                  flag_meanings=" ".join(STATUS_CATEGORIES),
                                  missing_value=-1)
        ds["outcome"].attrs.update(flag_values=np.arange(len(OUTCOME_CATEGORIES)),
                                   flag_meanings=" ".join(OUTCOME_CATEGORIES),
                                   missing_value=-1)
        for ax in raw.axes:
            ds[ax.name].attrs["path"] = ax.path
        ds.attrs.update(store=raw.path, sweep_name=str(raw.attrs.get("sweep_name", "")),
                        format_version=int(raw.attrs.get("format_version", 0)))
        return ds

    def grid(self, metric):
        """One variable of to_xarray() (e.g. "final_loss", "outcome") as a DataArray."""
        ds = self.to_xarray()
        if metric == "point":
            metric = "id"
        if metric not in ds:
            raise KeyError("unknown metric %r; variables: %s" % (metric, ", ".join(ds.data_vars)))
        return ds[metric]

    # ---- series ---------------------------------------------------------------------
    def series(self, name, points=None, where=None):
        """Tidy pandas DataFrame of one series over the written points that have it
        (point order): columns point, step, value (one value per record), or point,
        step, col, value when the series has several columns (sv/W1, layer_fro; col 0
        is the first, e.g. the largest singular value). points: ids to keep (None:
        all); where: as in select(). A name no written point recorded raises KeyError
        (while no point has been written at all, the frame is empty)."""
        pd = _pd()
        got = self.raw.series(name, where)
        recorded = self.raw.series_names() if not got else [name]
        if not got and recorded and name not in recorded:  # none written yet: empty frame
            raise KeyError("no point recorded a series %r; recorded: %s"
                           % (name, ", ".join(recorded)))
        if points is not None:
            keep = set(int(p) for p in np.atleast_1d(points))
            got = [g for g in got if g[0]["id"] in keep]
        wide = any(np.ndim(v) == 2 for _, _, v in got)
        pt, st, col, val = [], [], [], []
        for p, step, v in got:
            step = np.asarray(step, dtype=np.int64)
            v = np.asarray(v, dtype=np.float64)
            if wide:
                v = v.reshape(len(step), -1)
                n, k = v.shape
                pt.append(np.full(n * k, p["id"], dtype=np.int64))
                st.append(np.repeat(step, k))
                col.append(np.tile(np.arange(k, dtype=np.int64), n))
                val.append(v.ravel())
            else:
                pt.append(np.full(len(step), p["id"], dtype=np.int64))
                st.append(step)
                val.append(v.ravel())
        cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt))
        out = {"point": cat(pt, np.int64), "step": cat(st, np.int64)}
        if wide:
            out["col"] = cat(col, np.int64)
        out["value"] = cat(val, np.float64)
        return pd.DataFrame(out)


def _codes(v, cats):
    v = np.asarray(v, dtype=np.int64)
    return np.where((v >= 0) & (v < len(cats)), v, -1)


