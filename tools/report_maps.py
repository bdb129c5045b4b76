"""report_maps.py -- tools/dynsweep-report's maps of a grid store: outcome and
metric maps over the raw axes and over the normalised learning-rate axis (a
mixin of dynsweep-report's Report class; docs/analysis.md)."""
import math

from report_common import (LR_PATHS, OUTCOMES, OUTCOME_COLORS, OUTCOME_LETTERS,
                           OUTCOME_MARKERS, OUTCOME_SEVERITY, PANELS_MAX, Patch, colors, fmt,
                           go, make_subplots, matplotlib, np, plt)


class MapsMixin:
    # ---- maps over the raw axes ---------------------------------------------------
    def grid_cells(self):
        x, y = self.x, self.y
        xl = self.levels(x)
        yl = self.levels(y) if y else [None]
        ix = np.array([xl.index(v) for v in self.t[x].tolist()])
        iy = np.array([yl.index(v) for v in self.t[y].tolist()]) if y else np.zeros(self.raw.n, int)
        return xl, yl, ix, iy

    def split_axes(self, on):
        """The varying axes a figure over the axes `on` does not draw: it gets one
        panel per combination of their values (small multiples), unless that is more
        than PANELS_MAX panels: then ([], those axes), aggregated and said so."""
        rest = [a for a in self.var if a not in on]
        n = 1
        for a in rest:
            n *= len(self.levels(a))
        return (rest, []) if n <= PANELS_MAX else ([], rest)

    def map_panels(self):
        """[(title, row mask)] of the maps over x, y: one per value combination of the
        other varying axes (e.g. model.type=relu, model.type=tanh)."""
        split, agg = self.split_axes((self.x, self.y))
        self.map_split, self.map_agg = split, agg
        return self.facets(split)

    def agg_note(self):
        reps = int(self.c["replica"].max(initial=0)) > 0
        what = (["replicas"] if reps else []) + list(getattr(self, "map_agg", []))
        split = getattr(self, "map_split", [])
        note = ("aggregated over " + ", ".join(what)) if what else "one point per cell"
        if split:
            note = "one panel per %s; %s" % (" x ".join(split), note)
        return note

    def map_axes(self, ax, xl, yl):
        ax.set_xticks(range(len(xl)))
        ax.set_xticklabels([fmt(v) for v in xl], rotation=45 if len(xl) > 6 else 0,
                           ha="right" if len(xl) > 6 else "center")
        ax.set_xlim(-0.5, len(xl) - 0.5)
        ax.set_ylim(-0.5, len(yl) - 0.5)
        ax.set_xlabel(self.axis_label(self.x))
        if self.y:
            ax.set_yticks(range(len(yl)))
            ax.set_yticklabels([fmt(v) for v in yl])
            ax.set_ylabel(self.axis_label(self.y))
        else:
            ax.set_yticks([])

    def cell_labels(self, pfig, xl, yl, labels, prow=None):
        """Text on the cells of a plotly heatmap over categorical axes (up to 400 cells)."""
        if len(labels) > 400:
            return
        for c, r, text, colour in labels:
            kw = dict(row=prow, col=1) if prow is not None else {}
            pfig.add_annotation(x=c, y=r, text=text, showarrow=False,  # category axes: positions
                                font=dict(size=10, color=colour), **kw)

    def lr_note(self):
        """A caption's sentence on what an lr axis holds, where that is not eta itself."""
        if not any(self.raw.axis(a) is not None and self.raw.axis(a).path in LR_PATHS
                   for a in (self.x, self.y) if a):
            return ""
        if "lambda0" not in set(str(u) for u in self.units):
            return ""
        return (" With optimizer.lr_units: lambda0 the grid's lr is η·λ0 (η the absolute learning rate the "
                "optimiser used, λ0 the top NTK eigenvalue at step 0; column eta).")

    def outcome_legend(self, ax, counts):
        handles = [Patch(color=OUTCOME_COLORS[o], label="%s %s (%d)" % (OUTCOME_LETTERS[o], o, counts[o]))
                   for o in OUTCOMES]
        ax.legend(handles=handles, title="outcome (points)", fontsize=8, title_fontsize=9,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

    def outcome_map(self):
        xl, yl, ix, iy = self.grid_cells()
        panels = self.map_panels()
        npn = len(panels)
        fig, axs = plt.subplots(npn, 1, squeeze=False,
                                figsize=(max(5.5, 2.8 + 0.42 * len(xl)), npn * max(2.6, 1.3 + 0.5 * len(yl))))
        fig.subplots_adjust(hspace=0.6 if npn > 1 else 0.2)
        counts = {o: int((self.oc == o).sum()) for o in OUTCOMES}
        pfig = None
        if self.interactive:
            pfig = make_subplots(rows=npn, cols=1, vertical_spacing=min(0.25, 0.5 / npn) if npn > 1 else 0.0,
                                 subplot_titles=[t for t, _ in panels] if npn > 1 else None)
        for k, (ptitle, pm) in enumerate(panels):
            self._outcome_panel(axs[k][0], pfig, k + 1, xl, yl, ix, iy, pm,
                                ptitle if npn > 1 else None, counts, k == 0)
        rows = [[int(self.c["id"][i]), fmt(self.t[self.x][i]), fmt(self.t[self.y][i]) if self.y else "",
                 int(self.c["replica"][i]), self.oc[i]] + [fmt(self.t[a][i]) for a in self.map_split]
                for i in range(self.raw.n)]
        if pfig is not None:
            for o in OUTCOMES:
                pfig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="%s (%d)" % (o, counts[o]),
                                          marker=dict(symbol="square", size=12, color=OUTCOME_COLORS[o])))
            pfig.update_layout(title="outcome over %s x %s%s (colour: the cell's most common outcome; hover: "
                               "the counts)" % (self.x, self.y or "-", self.split_title()),
                               height=npn * max(300, 120 + 40 * len(yl)) + 60, template="plotly_white")
            pfig.update_xaxes(title=self.axis_label(self.x), type="category")
            pfig.update_yaxes(title=self.axis_label(self.y), type="category")
        self.add("map-outcome", "Outcome map: %s x %s%s" % (self.x, self.y or "-", self.split_title()),
                 "Outcome of every point over the grid axes %s and %s; %s. A cell is split into the shares "
                 "of its outcomes (left to right in the legend's order); the letter is the most common "
                 "(c converged, P plateaus, u unconverged, C catapult, D diverged, F failed, . pending; "
                 "ties: the worse, as dynsweep phase) with its count when the cell is mixed.%s"
                 % (self.x, self.y or "-", self.agg_note(), self.lr_note()), fig,
                 ["id", self.x, self.y or "", "replica", "outcome"] + self.map_split, rows, pfig,
                 outcome_counts=counts, outcome_colors=OUTCOME_COLORS, panels=[t for t, _ in panels],
                 split=self.map_split, aggregated=self.map_agg)

    def split_title(self):
        return (", one panel per " + " x ".join(self.map_split)) if getattr(self, "map_split", []) else ""

    def _outcome_panel(self, ax, pfig, prow, xl, yl, ix, iy, pm, ptitle, counts, legend):
        zmaj = np.full((len(yl), len(xl)), np.nan)
        labels = []  # (column, row, text, colour) of each cell
        hover = [["" for _ in xl] for _ in yl]
        for r in range(len(yl)):
            for cidx in range(len(xl)):
                m = (ix == cidx) & (iy == r) & pm
                if not m.any():
                    continue
                got = [o for o in OUTCOMES if (self.oc[m] == o).any()]
                n = int(m.sum())
                left = cidx - 0.5
                for o in got:  # the cell split into the outcomes' shares, left to right
                    share = float((self.oc[m] == o).sum()) / n
                    ax.add_patch(matplotlib.patches.Rectangle((left, r - 0.5), share, 1.0,
                                                              color=OUTCOME_COLORS[o], lw=0))
                    left += share
                best = max(got, key=lambda o: ((self.oc[m] == o).sum(), OUTCOME_SEVERITY[o]))
                k = int((self.oc[m] == best).sum())
                zmaj[r, cidx] = OUTCOMES.index(best)
                if len(xl) <= 30:
                    ax.text(cidx, r, OUTCOME_LETTERS[best] + ("" if k == n else "\n%d/%d" % (k, n)),
                            ha="center", va="center", fontsize=7 if k != n else 8,
                            color="white" if best in ("converged", "diverged") else "black")
                hover[r][cidx] = "<br>".join("%s: %d" % (o, int((self.oc[m] == o).sum())) for o in got)
                labels.append((cidx, r, OUTCOME_LETTERS[best] + ("" if k == n else " %d/%d" % (k, n)),
                               "white" if best in ("converged", "diverged") else "black"))
        for b in np.arange(-0.5, len(xl), 1.0):  # cell borders: mixed cells stay apart
            ax.axvline(b, color="white", lw=1.5)
        for b in np.arange(-0.5, len(yl), 1.0):
            ax.axhline(b, color="white", lw=1.5)
        self.map_axes(ax, xl, yl)
        ax.set_title(ptitle or "outcome over %s%s" % (self.x, " x " + self.y if self.y else ""))
        if legend:
            self.outcome_legend(ax, counts)
        if pfig is not None:
            n6 = len(OUTCOMES)
            scale = []
            for k, o in enumerate(OUTCOMES):
                scale += [[k / n6, OUTCOME_COLORS[o]], [(k + 1) / n6, OUTCOME_COLORS[o]]]
            pfig.add_trace(go.Heatmap(z=(zmaj + 0.5).tolist(), x=[fmt(v) for v in xl],
                                      y=[fmt(v) for v in yl] if self.y else [""],
                                      zmin=0, zmax=n6, colorscale=scale, showscale=False,
                                      text=hover, hovertemplate="%s=%%{x}<br>%s=%%{y}<br>%%{text}<extra></extra>"
                                      % (self.x, self.y or ""), xgap=1, ygap=1, name=ptitle or "",
                                      showlegend=False), row=prow, col=1)
            self.cell_labels(pfig, xl, yl, labels, prow)

    def metric_map(self, key, title, label, values, log, fid=None, fmt_cell="%.3g", bar=None):
        """Mean of values (NaN: no value) over each cell of the raw axes, done points;
        one panel per value combination of the other varying axes (map_panels)."""
        xl, yl, ix, iy = self.grid_cells()
        panels = self.map_panels()
        npn = len(panels)
        grids, divs, rows = [], [], []
        for ptitle, pm in panels:
            grid = np.full((len(yl), len(xl)), np.nan)
            div = np.zeros((len(yl), len(xl)), dtype=bool)
            for r in range(len(yl)):
                for cidx in range(len(xl)):
                    m = (ix == cidx) & (iy == r) & pm
                    ok = m & np.isfinite(values)
                    if ok.any():
                        grid[r, cidx] = float(np.mean(values[ok]))
                        rows += [[int(self.c["id"][i]), fmt(self.t[self.x][i]),
                                  fmt(self.t[self.y][i]) if self.y else "", self.oc[i], repr(float(values[i]))]
                                 + [fmt(self.t[a_][i]) for a_ in self.map_split]
                                 for i in np.nonzero(ok)[0]]
                    elif m.any() and (self.oc[m] == "diverged").all():
                        div[r, cidx] = True
            grids.append(grid)
            divs.append(div)
        if not rows:
            return False
        fig, axs = plt.subplots(npn, 1, squeeze=False,
                                figsize=(max(5.5, 2.8 + 0.42 * len(xl)), npn * max(2.6, 1.3 + 0.5 * len(yl))))
        fig.subplots_adjust(hspace=0.6 if npn > 1 else 0.2)
        allv = np.concatenate([g[np.isfinite(g)] for g in grids])
        # one colour scale for every panel: the panels compare
        norm = colors.LogNorm(vmin=allv.min(), vmax=allv.max()) if log and (allv > 0).all() and \
            allv.max() > allv.min() else colors.Normalize(vmin=allv.min(), vmax=allv.max())
        cmap = plt.get_cmap("viridis").copy()
        cmap.set_bad("white")
        pfig = None
        if self.interactive:
            pfig = make_subplots(rows=npn, cols=1, vertical_spacing=min(0.25, 0.5 / npn) if npn > 1 else 0.0,
                                 subplot_titles=[t for t, _ in panels] if npn > 1 else None)
        islog = isinstance(norm, colors.LogNorm)
        for k, ((ptitle, _), grid, div) in enumerate(zip(panels, grids, divs)):
            ax = axs[k][0]
            img = ax.imshow(np.ma.masked_invalid(grid), origin="lower", cmap=cmap, aspect="auto", norm=norm,
                            extent=(-0.5, len(xl) - 0.5, -0.5, len(yl) - 0.5))
            fig.colorbar(img, ax=ax, label=bar or label)
            for r in range(len(yl)):
                for cidx in range(len(xl)):
                    if div[r, cidx]:
                        ax.add_patch(matplotlib.patches.Rectangle((cidx - 0.5, r - 0.5), 1, 1, fc="#dddddd",
                                                                  ec="white", hatch="///", lw=0))
                        ax.text(cidx, r, "D", ha="center", va="center", fontsize=8, color="#D55E00")
                    elif np.isfinite(grid[r, cidx]) and len(xl) <= 12:
                        ax.text(cidx, r, fmt_cell % grid[r, cidx], ha="center", va="center", fontsize=7,
                                color="white" if norm(grid[r, cidx]) < 0.5 else "black")
            self.map_axes(ax, xl, yl)
            ax.set_title(title + ("\n" + ptitle if npn > 1 else ""), fontsize=10 if npn > 1 else 12)
            if pfig is not None:
                z = np.where(np.isfinite(grid), np.log10(np.where(grid > 0, grid, np.nan)) if islog else grid,
                             np.nan)
                txt = [["diverged" if div[r][c] else ("" if not np.isfinite(grid[r][c]) else fmt_cell % grid[r][c])
                        for c in range(len(xl))] for r in range(len(yl))]
                zmin, zmax = (math.log10(allv.min()), math.log10(allv.max())) if islog else (allv.min(), allv.max())
                pfig.add_trace(go.Heatmap(
                    z=[[None if not np.isfinite(v) else float(v) for v in row] for row in z],
                    x=[fmt(v) for v in xl], y=[fmt(v) for v in yl] if self.y else [""],
                    colorscale="Viridis", text=txt, xgap=1, ygap=1, zmin=float(zmin), zmax=float(zmax),
                    showscale=k == 0, colorbar=dict(title=("log10 " if islog else "") + key),
                    hovertemplate="%s%s=%%{x}<br>%s=%%{y}<br>%s %%{text}<extra></extra>"
                    % (ptitle + "<br>" if npn > 1 else "", self.x, self.y or "", key)), row=k + 1, col=1)
                self.cell_labels(pfig, xl, yl, [(c, r, "D" if div[r][c] else fmt_cell % grid[r][c],
                                                 "#D55E00" if div[r][c] else
                                                 "white" if norm(grid[r][c]) < 0.5 else "black")
                                                for r in range(len(yl)) for c in range(len(xl))
                                                if div[r][c] or np.isfinite(grid[r][c])], k + 1)
        if pfig is not None:
            pfig.update_layout(title=title + self.split_title(), height=npn * max(300, 120 + 40 * len(yl)) + 60,
                               template="plotly_white")
            pfig.update_xaxes(title=self.axis_label(self.x), type="category")
            pfig.update_yaxes(title=self.axis_label(self.y), type="category")
        self.add(fid or "map-" + key, "Map: %s over %s x %s%s" % (key, self.x, self.y or "-", self.split_title()),
                 "%s; mean over the done points of a cell, %s (one colour scale for all panels); hatched D: "
                 "every point of the cell diverged; blank: no value." % (label, self.agg_note()), fig,
                 ["id", self.x, self.y or "", "outcome", key] + self.map_split, rows, pfig,
                 panels=[t for t, _ in panels], split=self.map_split, aggregated=self.map_agg)
        return True

    def loss_maps(self):
        done = self.c["status"] == 1
        ml = np.where(done, self.c["min_loss"].astype(float), np.nan)
        fin = ml[np.isfinite(ml)]
        if len(fin) and fin.min() > 0 and fin.max() / fin.min() > 1.1:
            self.metric_map("min_loss", "minimum training loss over %s x %s" % (self.x, self.y or "-"),
                            "minimum training loss (log colour)", ml, True)
        elif len(fin):
            self.note("maps", "min_loss is %.4g in every done point (within 10%%): its map would be one "
                      "colour and is left out; the steps-to-99%% map shows how fast each point got there"
                      % np.median(fin))
        stt = self.c["steps_to_tol"].astype(float)
        if np.isfinite(stt).any():
            self.metric_map("steps_to_tol", "steps to train.tol over %s x %s" % (self.x, self.y or "-"),
                            "steps to reach train.tol (blank: not reached)", stt, False, fmt_cell="%.0f")
        else:
            self.note("maps", "no point reached train.tol (or it is 0): no steps_to_tol map")
        t99 = self.steps_to_99()
        if not self.metric_map("steps_to_99", "steps to 99%% of the loss drop over %s x %s" % (self.x, self.y or "-"),
                               "steps until L_t - L_min <= 0.01 (L_0 - L_min), L_min the point's minimum "
                               "loss (log colour)", t99, True, fmt_cell="%.0f", bar="steps to 99% of the drop"):
            self.note("maps", "no done point has a loss series that decreased: no steps_to_99 map")

    def steps_to_99(self):
        out = np.full(self.raw.n, np.nan)
        for pid, (step, v) in self.series("loss").items():
            i = self.row_of(pid)
            if self.c["status"][i] != 1 or not len(step) or step[0] != 0:
                continue
            v = v.reshape(len(step), -1)[:, 0]
            lmin = np.nanmin(v)
            drop = v[0] - lmin
            if not np.isfinite(drop) or drop <= 0:
                continue
            hit = np.nonzero(v - lmin <= 0.01 * drop)[0]
            if len(hit):
                out[i] = max(float(step[hit[0]]), 1.0)
        return out

    # ---- maps over the normalised axis --------------------------------------------
    def norm_axis(self):
        """(column, label, theory lines) of the normalised x axis, or None."""
        lam, crit = self.c["lambda0"], self.c["eta_crit0"]
        ok = np.isfinite(self.c["lr_lambda0"])
        if not ok.any():
            return None
        k = lam * crit
        kk = k[np.isfinite(k)]
        want = self.args.norm_x
        if want == "lr_eta_crit" or (want is None and (not len(kk) or
                                                       np.ptp(kk) > 1e-6 * abs(np.median(kk)))):
            if not np.isfinite(self.c["lr_eta_crit"]).any():
                return None
            return "lr_eta_crit", "η / η_crit0 (lr_eta_crit)", [(1.0, "η = η_crit"), (2.0, "η = 2 η_crit")]
        # eta: the absolute learning rate (with lr_units: lambda0 the grid's lr is already eta * lambda0)
        label = "η·λ0 (lr_lambda0%s)" % (
            "; = the grid's lr, optimizer.lr_units: lambda0" if set(str(u) for u in self.units) == {"lambda0"}
            else ", η the absolute learning rate")
        if not len(kk):
            return "lr_lambda0", label, []
        k0 = float(np.median(kk))
        return "lr_lambda0", label, [(k0, "η = η_crit (ηλ0 = %g)" % k0),
                                     (2 * k0, "η = 2 η_crit (ηλ0 = %g)" % (2 * k0))]

    @staticmethod
    def log_subs(x):
        """Tick mantissas for a log axis over the values x: fewer the more decades."""
        dec = math.log10(x.max() / x.min()) if len(x) and x.min() > 0 else 1.0
        return (1, 2, 3, 4, 5, 6, 8) if dec <= 1.3 else (1, 2, 5) if dec <= 3 else (1,)

    def norm_cells(self, col):
        """[(row index, y level, [(point row, left, right, band, bands)])] nearest cells
        per y level; points at the same value share its cell, each in a band of its
        height (band of bands, in point order)."""
        xn = self.c[col].astype(float)
        # one row per y value and value combination of the other varying axes but lr (the
        # normalised axis is lr's): relu and tanh points never share a row
        split, _ = self.split_axes((self.x, self.y, "lr"))
        self.norm_split = split
        yl = []
        for plabel, pm in self.facets(split):
            for yv in (self.levels(self.y) if self.y else [None]):
                m = pm & ((self.t[self.y] == yv) if self.y else True)
                lab = fmt(yv) if self.y else "all"
                yl.append((lab + " | " + plabel if split else lab, m))
        out = []
        for r, (yv, ym) in enumerate(yl):
            m = np.isfinite(xn) & (xn > 0) & ym
            idx = np.nonzero(m)[0]
            if not len(idx):
                continue
            idx = idx[np.argsort(xn[idx], kind="stable")]
            lx = np.log(xn[idx])
            # cells around the distinct values (points with the same value share its
            # cell: with all of a row's points at one value, the cells had no width)
            ux = np.unique(lx)
            mid = (ux[1:] + ux[:-1]) / 2
            half = (ux[-1] - ux[0]) / (len(ux) - 1) / 2 if len(ux) > 1 else 0.35
            edges = np.concatenate([[ux[0] - half], mid, [ux[-1] + half]])
            cell = np.searchsorted(ux, lx)
            nb = np.bincount(cell, minlength=len(ux))
            seen = np.zeros(len(ux), dtype=int)
            lst = []
            for j, i in enumerate(idx):
                c = cell[j]
                lst.append((int(i), float(np.exp(edges[c])), float(np.exp(edges[c + 1])), int(seen[c]), int(nb[c])))
                seen[c] += 1
            out.append((r, yv, lst))
        return [lab for lab, _ in yl], out

    def norm_map(self, kind):
        na = self.norm_axis()
        if na is None:
            if kind == "outcome":
                self.note("maps", "no point recorded ntk/top or hessian/top at step 0 (lambda0): no maps over "
                          "lr*lambda0 (record.spectra.ntk or .hessian with a record at step 0)")
            return
        col, xlabel, lines = na
        yl, cells = self.norm_cells(col)
        xn = self.c[col].astype(float)
        pr = self.c["peak_ratio"].astype(float)
        if kind == "peak":
            good = (self.c["status"] == 1) & np.isfinite(pr) & (pr > 0)
            if not good.any():
                self.note("maps", "no done point has a peak_ratio: no peak-ratio map")
                return
            norm = colors.LogNorm(vmin=max(pr[good].min(), 1e-3), vmax=max(pr[good].max(), 1.0 + 1e-9))
            cmap = plt.get_cmap("magma_r")
        fig, ax = plt.subplots(figsize=(10, max(2.4, 1.2 + 0.55 * len(yl))))
        rows = []
        for r, yv, lst in cells:
            for i, left, right, band, bands in lst:
                o = self.oc[i]
                if kind == "outcome":
                    fc = OUTCOME_COLORS[o]
                    hatch = None
                elif self.c["status"][i] == 1 and np.isfinite(pr[i]) and pr[i] > 0:
                    fc, hatch = cmap(norm(pr[i])), None
                else:
                    fc, hatch = "#dddddd", "///"
                ax.barh(r - 0.43 + (band + 0.5) * 0.86 / bands, right - left, left=left, height=0.86 / bands,
                        color=fc, hatch=hatch, lw=0, edgecolor="white" if hatch else None)
                rows.append([int(self.c["id"][i]), repr(float(xn[i])), yv if (self.y or self.norm_split) else "",
                             fmt(self.t["lr"][i]), repr(float(self.c["lambda0"][i])), o, repr(float(pr[i])),
                             repr(float(self.eta[i]))])
            xs = [xn[i] for i, *_ in lst]
            ax.plot(xs, [r - 0.43] * len(xs), "|", color="black", ms=5, mew=0.8)  # the exact positions
        for j, (v, lab) in enumerate(lines):  # the first label left of its line, the second right
            ax.axvline(v, color="black", ls="--", lw=1.1)
            ax.text(v, 1.0, (lab + " ") if j == 0 else (" " + lab), transform=ax.get_xaxis_transform(),
                    va="bottom", ha="right" if j == 0 else "left", fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=self.log_subs(xn[np.isfinite(xn) & (xn > 0)])))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(xlabel + " (ticks below each row: the points' exact values)")
        ax.set_ylim(-0.5, len(yl) - 0.5)
        if self.y:
            ax.set_yticks(range(len(yl)))
            ax.set_yticklabels([fmt(v) for v in yl])
            ax.set_ylabel(self.axis_label(self.y))
        else:
            ax.set_yticks([])
        if self.norm_split:  # the rows are y x the other axes
            ax.set_yticks(range(len(yl)))
            ax.set_yticklabels(yl, fontsize=8)
            ax.set_ylabel("%s | %s" % (self.y or "-", " x ".join(self.norm_split)))
            for r in range(1, len(yl)):
                ax.axhline(r - 0.5, color="white", lw=2)
        counts = {o: int((self.oc == o).sum()) for o in OUTCOMES}
        if kind == "outcome":
            ax.set_title("outcome over %s x %s" % (xlabel.split(" (")[0], self.y or "-"), pad=16)
            self.outcome_legend(ax, counts)
        else:
            ax.set_title("peak loss ratio max_t L_t / L_0 over %s x %s" % (xlabel.split(" (")[0], self.y or "-"),
                         pad=16)
            sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
            fig.colorbar(sm, ax=ax, label="peak_ratio (log); hatched: not done (diverged, ...)")
        pfig = None
        if self.interactive:
            pfig = go.Figure()
            ymap = {v: k for k, v in enumerate(yl)}
            if kind == "outcome":
                for o in OUTCOMES:
                    sel = [row for row in rows if row[5] == o]
                    if not sel:
                        continue
                    pfig.add_trace(go.Scatter(
                        x=[float(s[1]) for s in sel], y=[s[2] or "all" for s in sel], mode="markers",
                        name="%s (%d)" % (o, len(sel)), text=[self.point_label(self.row_of(s[0])) for s in sel],
                        marker=dict(symbol=OUTCOME_MARKERS[o], size=11, color=OUTCOME_COLORS[o],
                                    line=dict(width=0.5, color="black")),
                        hovertemplate="%{text}<br>" + col + " %{x:.4g}<extra></extra>"))
            else:
                sel = [row for row in rows if row[5] != "diverged" and float(row[6]) > 0]
                pfig.add_trace(go.Scatter(
                    x=[float(s[1]) for s in sel], y=[s[2] or "all" for s in sel], mode="markers", name="done",
                    text=[self.point_label(self.row_of(s[0])) for s in sel],
                    marker=dict(symbol="square", size=12, color=[math.log10(float(s[6])) for s in sel],
                                colorscale="Magma", reversescale=True,
                                colorbar=dict(title="log10 peak_ratio")),
                    customdata=[float(s[6]) for s in sel],
                    hovertemplate="%{text}<br>" + col + " %{x:.4g}<br>peak_ratio %{customdata:.4g}<extra></extra>"))
                dsel = [row for row in rows if row[5] == "diverged"]
                if dsel:
                    pfig.add_trace(go.Scatter(x=[float(s[1]) for s in dsel], y=[s[2] or "all" for s in dsel],
                                              mode="markers", name="diverged",
                                              marker=dict(symbol="x", size=9, color="#D55E00"),
                                              text=[self.point_label(self.row_of(s[0])) for s in dsel],
                                              hovertemplate="%{text}<extra></extra>"))
            xs = [float(row_[1]) for row_ in rows] + [v for v, _ in lines]
            lo, hi = math.log10(min(xs)), math.log10(max(xs))
            ticks = [m * 10.0 ** e for e in range(int(math.floor(lo)), int(math.ceil(hi)) + 1)
                     for m in self.log_subs(np.array(xs)) if lo - 0.05 <= math.log10(m * 10.0 ** e) <= hi + 0.05]
            ticks = [float("%.6g" % v) for v in ticks]
            for j, (v, lab) in enumerate(lines):  # on a log axis, shapes take data values, annotations log10
                pfig.add_shape(type="line", x0=v, x1=v, y0=0, y1=1, yref="paper",
                               line=dict(dash="dash", color="black"))
                pfig.add_annotation(x=math.log10(v), y=1.0, yref="paper", text=lab, showarrow=False,
                                    yanchor="bottom", xanchor="right" if j == 0 else "left")
            pfig.update_layout(title=ax.get_title(), template="plotly_white", height=max(340, 160 + 45 * len(yl)),
                               legend=dict(orientation="h", x=0, y=1.1, yanchor="bottom"), margin=dict(t=120),
                               xaxis=dict(type="log", title=xlabel, range=[lo - 0.05, hi + 0.05],
                                          tickvals=ticks, ticktext=[fmt(v) for v in ticks]),
                               yaxis=dict(type="category", title=self.axis_label(self.y),
                                          categoryorder="array", categoryarray=list(ymap)))
        header = ["id", col, self.y or "", "lr", "lambda0", "outcome", "peak_ratio", "eta"]
        if kind == "outcome":
            self.add("map-outcome-norm", "Outcome map: %s x %s" % (xlabel.split(" (")[0], self.y or "-"),
                     "Outcome of every point that has lambda0, over the normalised learning rate %s (log) and "
                     "%s. The points are scattered in this axis: the PNG draws each as the cell up to the "
                     "midpoints (in log) to its neighbours in its row; the ticks under a row are the exact "
                     "values (the interactive map: one marker per point). Dashed: the theory lines %s (the catapult band "
                     "lies between them)."
                     % (xlabel, self.y or "-", " and ".join(lab for _, lab in lines) or "(none: mixed losses)"),
                     fig, header, rows, pfig, outcome_counts=counts, outcome_colors=OUTCOME_COLORS,
                     theory_lines=[v for v, _ in lines], x=col, row_labels=yl, split=self.norm_split)
        else:
            self.add("map-peak_ratio", "Peak-ratio map: %s x %s" % (xlabel.split(" (")[0], self.y or "-"),
                     "peak_ratio = max over t >= 1 of L_t / L_0 of every done point (log colour; > 1: the loss "
                     "rose above its start, the catapult), same cells as the outcome map over %s; hatched "
                     "grey: diverged or not done." % xlabel, fig, header, rows, pfig, x=col, row_labels=yl,
                     split=self.norm_split)

    def peak_map_raw(self):
        if self.norm_axis() is not None:
            return
        pr = np.where(self.c["status"] == 1, self.c["peak_ratio"].astype(float), np.nan)
        pr = np.where(pr > 0, pr, np.nan)
        if not self.metric_map("peak_ratio", "peak loss ratio over %s x %s" % (self.x, self.y or "-"),
                               "peak_ratio = max_{t>=1} L_t / L_0 (log colour)", pr, True, fid="map-peak_ratio"):
            self.note("maps", "no done point has a peak_ratio: no peak-ratio map")
