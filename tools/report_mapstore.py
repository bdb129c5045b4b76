"""report_mapstore.py -- tools/dynsweep-report's figures of a map store (a sweep
with map:, docs/maps.md), drawn as tools/dynsweep-map draws them: a mixin of
dynsweep-report's Report class."""
import math
import os

from report_common import (PANELS_MAX, colors, fail, fmt, go, make_subplots, matplotlib, np,
                           plt)


class MapStoreMixin:
    # ---- map stores ----------------------------------------------------------------
    def map_store(self):
        """The figures of a map store (a sweep with map:, docs/maps.md): the study's
        convergence measure, the outcome, computed vs inferred pixels and the boundary
        with its box-counting dimension, drawn as `dynsweep map` draws them
        (tools/dynsweep-map, python/dynsweep/maps.py); one panel per index
        combination of the axes beyond the two drawn."""
        import itertools
        from importlib.machinery import SourceFileLoader
        from dynsweep import maps
        dm = SourceFileLoader("dynsweep_map", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                           "dynsweep-map")).load_module()
        st = self.raw
        names = [a.name for a in st.axes]
        sizes = [len(c) for c in st.map_coords]
        var = [n for n, k in zip(names, sizes) if k > 1]
        pick = [a for a in (self.args.x, self.args.y) if a]
        for a in pick:
            if st.axis(a) is None:
                fail(2, "unknown axis '%s'; axes: %s" % (a, ", ".join(names)))
        pick = [st.axis(a).name for a in pick]
        xy = (pick + [n for n in var if n not in pick])[:2]
        if len(xy) < 2:
            xy = (xy + [n for n in names if n not in xy])[:2]
        if len(xy) < 2:
            self.note("maps", "a map store over fewer than two axes: no maps")
            return
        self.x, self.y = xy
        self.map_split = [n for n in var if n not in xy]
        self.map_agg = []
        combos = list(itertools.product(*[range(sizes[names.index(n)]) for n in self.map_split]))
        if len(combos) > PANELS_MAX:
            self.note("maps", "%d slices of %s: the first %d drawn" % (len(combos), " x ".join(self.map_split),
                                                                      PANELS_MAX))
            combos = combos[:PANELS_MAX]
        panels = [(", ".join("%s=%s" % (n, fmt(st.map_coords[names.index(n)][k]))
                             for n, k in zip(self.map_split, c)), dict(zip(self.map_split, c))) for c in combos]
        mm = st.map()
        self.map_info = {"pixels": int(np.prod(sizes)), "computed": int(mm["computed"].sum()),
                         "inferred": int(mm["inferred"].sum()), "steps": int(mm["steps"]),
                         "refine_levels": int(mm["refine_levels"]), "shape": sizes, "axes": names,
                         "classes": {n: int((mm["outcome"] == k).sum()) for k, n in enumerate(maps.MAP_OUTCOMES[:4])}}
        xlab, ylab = dm.axis_label(st, self.x), dm.axis_label(st, self.y)

        def draw(metric, fid, title, caption, cbar):
            npn = len(panels)
            fig, axs = plt.subplots(npn, 1, squeeze=False, figsize=(7.2, 5.6 * npn))
            rows, fits, pfig = [], [], None
            if self.interactive:
                pfig = make_subplots(rows=npn, cols=1, subplot_titles=[t for t, _ in panels] if npn > 1 else None)
            for k, (ptitle, at) in enumerate(panels):
                m = maps.store_map(st, self.x, self.y, metric if metric != "boundary" else bmetric, at=at)
                ax = axs[k][0]
                lx, ly = dm.log_spaced(m.x), dm.log_spaced(m.y)
                ex, ey = dm.edges(m.x, lx), dm.edges(m.y, ly)
                v = m.values
                # big maps on evenly spaced axes: one image in log10 coordinates, as dynsweep map
                # (pcolormesh of 10^6 quads takes minutes)
                big = v.size > 512 * 512 and dm.evenly(m.x, lx) and dm.evenly(m.y, ly)
                cx, cy = m.x, m.y
                if big:
                    ex, ey = (np.log10(ex) if lx else ex), (np.log10(ey) if ly else ey)
                    cx, cy = (np.log10(m.x) if lx else m.x), (np.log10(m.y) if ly else m.y)

                    def pmesh(_ex, _ey, vals, _a=ax, _e=(ex[0], ex[-1], ey[0], ey[-1]), **kw):
                        return _a.imshow(vals, origin="lower", extent=_e, aspect="auto",
                                         interpolation="nearest", **kw)
                else:
                    pmesh = ax.pcolormesh
                sgn = v if metric == "measure" or (metric == "boundary" and bmetric == "measure") else None
                if metric == "outcome" or (metric == "boundary" and bmetric == "outcome"):
                    sgn = np.where(np.isnan(v), np.nan, np.where(v == 1, 1.0, -1.0))
                bnd = maps.boundary(sgn) if sgn is not None else None
                if metric == "measure":
                    img = pmesh(ex, ey, maps.rank_rescale(v), cmap="RdBu_r", vmin=-1, vmax=1)
                    fig.colorbar(img, ax=ax, label=cbar)
                elif metric == "outcome":
                    cl = maps.MAP_OUTCOMES[:4]
                    cmap = colors.ListedColormap([dm.OUTCOME_COLOURS[n] for n in cl])
                    img = pmesh(ex, ey, v, cmap=cmap, vmin=-0.5, vmax=3.5)
                    cb = fig.colorbar(img, ax=ax, ticks=range(4))
                    cb.ax.set_yticklabels(["%s (%d)" % (n, int((v == j).sum())) for j, n in enumerate(cl)])
                elif metric == "computed":
                    cmap = colors.ListedColormap(["#ffffff", "#E69F00", "#000000"])
                    img = pmesh(ex, ey, v, cmap=cmap, vmin=-0.25, vmax=1.25)
                    cb = fig.colorbar(img, ax=ax, ticks=[0, 0.5, 1])
                    cb.ax.set_yticklabels(["not computed (%d)" % int((v == 0).sum()),
                                           "inferred (%d)" % int((v == 0.5).sum()),
                                           "trained (%d)" % int((v == 1).sum())])
                if metric == "boundary":
                    bx = np.zeros_like(v)
                    if bnd is not None and bnd.any():
                        bx[:-1, :-1] = bnd
                    ax.set_visible(False)
                    ax = fig.add_subplot(npn, 2, 2 * k + 1)
                    ax.imshow(bnd if bnd is not None else np.zeros((1, 1)), origin="lower", cmap="Greys",
                              interpolation="nearest", aspect="auto")
                    ax.set_title("boundary pixels (2x2 blocks of both signs)" + ("\n" + ptitle if npn > 1 else ""),
                                 fontsize=9)
                    ax.set_xlabel(self.x + " (pixel)")
                    ax.set_ylabel(self.y + " (pixel)")
                    a2 = fig.add_subplot(npn, 2, 2 * k + 2)
                    if bnd is None or not bnd.any():
                        a2.text(0.5, 0.5, "no boundary: every pixel on one side", ha="center",
                                transform=a2.transAxes)
                        fits.append(None)
                        continue
                    try:
                        fr = maps.box_counting(bnd)
                    except ValueError as e:
                        a2.text(0.5, 0.5, str(e), ha="center", transform=a2.transAxes, wrap=True)
                        fits.append(None)
                        continue
                    fits.append(fr)
                    a2.loglog(fr.sizes, fr.counts, "o", color="#0072B2", label="N(s)")
                    sel = np.isin(fr.sizes, fr.fit_sizes)
                    c0 = np.exp(np.mean(np.log(fr.counts[sel]) + fr.dimension * np.log(fr.sizes[sel])))
                    a2.loglog(fr.fit_sizes, c0 * fr.fit_sizes ** -fr.dimension, "-", color="#D55E00",
                              label="fit: dimension %.3f (R² %.4f)" % (fr.dimension, fr.r2))
                    for a_ in (a2.xaxis, a2.yaxis):
                        a_.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
                        a_.set_minor_formatter(matplotlib.ticker.NullFormatter())
                    a2.set_xlabel("box size s (pixels)")
                    a2.set_ylabel("boxes on the boundary N(s)")
                    a2.legend(fontsize=8)
                    a2.set_title("box counting: dimension %.3f" % fr.dimension, fontsize=9)
                    rows += [[ptitle, int(sz), int(cn), int(sz in fr.fit_sizes), repr(fr.dimension)]
                             for sz, cn in zip(fr.sizes, fr.counts)]
                    if pfig is not None:
                        pfig.add_trace(go.Scatter(x=fr.sizes.tolist(), y=fr.counts.tolist(), mode="markers+lines",
                                                  name="N(s) %s" % ptitle, showlegend=npn > 1 or k == 0),
                                       row=k + 1, col=1)
                    continue
                if bnd is not None and bnd.any() and len(m.x) > 1 and len(m.y) > 1:
                    ax.contour(cx, cy, np.nan_to_num(np.sign(sgn)), levels=[0], colors="k", linewidths=0.8)
                for on, a_, setter in ((lx, ax.xaxis, ax.set_xscale), (ly, ax.yaxis, ax.set_yscale)):
                    if on and big:
                        a_.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda q, _: "%.3g" % 10 ** q))
                    elif on:
                        setter("log")
                ax.set_xlabel(xlab + (" (log scale)" if lx else ""))
                ax.set_ylabel(ylab + (" (log scale)" if ly else ""))
                ax.set_title(title + ("\n" + ptitle if npn > 1 else ""), fontsize=10)
                jj, ii = np.nonzero(np.isfinite(v))
                rows += [[ptitle, repr(float(m.x[i])), repr(float(m.y[j])), repr(float(v[j, i])),
                          int(m.computed[j, i])] for j, i in zip(jj, ii)]
                if pfig is not None:
                    step = max(1, int(math.ceil(max(v.shape) / 256)))  # at most 256 x 256 cells in the page
                    z = maps.rank_rescale(v) if metric == "measure" else v
                    z = z[::step, ::step]
                    pfig.add_trace(go.Heatmap(
                        z=[[None if not np.isfinite(q) else float(q) for q in row] for row in z],
                        x=m.x[::step].tolist(), y=m.y[::step].tolist(), showscale=k == 0 and metric == "measure",
                        colorscale="RdBu" if metric == "measure" else
                        [[0, "#0072B2"], [0.25, "#0072B2"], [0.25, "#D55E00"], [0.5, "#D55E00"],
                         [0.5, "#E69F00"], [0.75, "#E69F00"], [0.75, "#CC79A7"], [1, "#CC79A7"]]
                        if metric == "outcome" else [[0, "#ffffff"], [0.5, "#E69F00"], [1, "#000000"]],
                        reversescale=metric == "measure", showlegend=False,
                        zmin=-1 if metric == "measure" else 0 if metric == "computed" else -0.5,
                        zmax=1 if metric != "outcome" else 3.5,
                        hovertemplate="%s %%{x:.4g}<br>%s %%{y:.4g}<br>%s %%{z}<extra></extra>"
                        % (self.x, self.y, metric)), row=k + 1, col=1)
            if pfig is not None and metric in ("outcome", "computed"):
                leg = ([(n, dm.OUTCOME_COLOURS[n]) for n in maps.MAP_OUTCOMES[:4]] if metric == "outcome" else
                       [("trained", "#000000"), ("inferred", "#E69F00"), ("not computed", "#ffffff")])
                for n, c in leg:
                    pfig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=n,
                                              marker=dict(symbol="square", size=12, color=c,
                                                          line=dict(width=1, color="#888"))))
            if pfig is not None and metric != "boundary":
                pfig.update_xaxes(type="log" if dm.log_spaced(st.map_coords[names.index(self.x)]) else "linear",
                                  title=xlab)
                pfig.update_yaxes(type="log" if dm.log_spaced(st.map_coords[names.index(self.y)]) else "linear",
                                  title=ylab)
            if pfig is not None:
                pfig.update_layout(title=title, template="plotly_white", height=480 * npn + 60)
                if metric == "boundary":
                    pfig.update_xaxes(type="log", title="box size s (pixels)")
                    pfig.update_yaxes(type="log", title="boxes on the boundary N(s)")
            fig.tight_layout()
            if not rows:
                plt.close(fig)
                self.note("maps", "%s: nothing to draw" % fid)
                return
            header = (["panel", "box_size", "boxes", "in_fit", "dimension"] if metric == "boundary" else
                      ["panel", self.x, self.y, metric, "computed"])
            meta = dict(panels=[t for t, _ in panels], split=self.map_split)
            if metric == "boundary":
                meta["dimension"] = [f.dimension if f else None for f in fits]
                caption += " Dimension%s: %s." % ("s" if npn > 1 else "", ", ".join(
                    "%.3f (%s)" % (f.dimension, t or "map") if f else "none (%s)" % (t or "map")
                    for f, (t, _) in zip(fits, panels)))
            self.add(fid, title + (", one panel per " + " x ".join(self.map_split) if self.map_split else ""),
                     caption, fig, header, rows, pfig, **meta)

        shape = "%d x %d" % (sizes[names.index(self.x)], sizes[names.index(self.y)])
        # the boundary of the measure, as the study; a refined map's inferred pixels have no
        # measure, so there the boundary is the outcome's (diverged against the rest)
        bmetric = "measure" if self.map_info["inferred"] == 0 else "outcome"
        self.map_info["boundary_of"] = bmetric
        draw("measure", "map-measure", "Convergence measure over %s x %s (%s)" % (self.x, self.y, shape),
             "The trainability-fractal study's convergence measure of every pixel (negative converged, "
             "positive diverged; docs/maps.md), rank-rescaled to [-1, 1] keeping its sign (blue converged, red "
             "diverged); black: the converged/diverged boundary. Blank: not computed (inferred pixels of a "
             "refined map have no measure). As `dynsweep map --metric measure`.",
             "convergence measure, rank-rescaled\n(< 0 converged, > 0 diverged)")
        draw("outcome", "map-outcome", "Outcome over %s x %s (%s)" % (self.x, self.y, shape),
             "The class of every pixel (converged, diverged, catapult, failed; an inferred pixel carries its "
             "refinement cell's corners' class); black: the boundary between diverged and the rest. As "
             "`dynsweep map --metric outcome`.", None)
        draw("computed", "map-computed", "Computed and inferred pixels over %s x %s (%s)" % (self.x, self.y, shape),
             "Black: trained; orange: inferred from a refinement cell whose four corners agree (grid.refine); "
             "white: not computed. %d of %d pixels trained, %d inferred."
             % (self.map_info["computed"], self.map_info["pixels"], self.map_info["inferred"]), None)
        draw("boundary", "map-boundary", "Boundary and its box-counting dimension (%s)" % shape,
             "Left: the boundary pixels (2x2 blocks of the %s with both signs, maps.boundary%s); right: "
             % ("measure" if bmetric == "measure" else "outcome (diverged against the rest)",
                "" if bmetric == "measure" else ": a refined map's inferred pixels have no measure") +
             "the number of s x s boxes holding boundary pixels against s (log-log) and the fitted slope, the "
             "box-counting dimension (maps.box_counting, its default fit range; as `dynsweep map "
             "--fractal-dimension` with --metric %s)." % bmetric, None)
