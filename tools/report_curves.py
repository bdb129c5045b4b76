"""report_curves.py -- tools/dynsweep-report's loss curves and spectra (singular
values, top Hessian / NTK eigenvalues against their stability thresholds): a
mixin of dynsweep-report's Report class (docs/analysis.md)."""
import math

from report_common import LAYER_STYLES, Line2D, PANELS_MAX, fmt, go, make_subplots, np, plt


class CurvesMixin:
    # ---- loss curves --------------------------------------------------------------
    def curves(self, name, fid, title):
        ser = self.series(name) if name in self.series_names else {}
        if not ser:
            self.note("curves", "series '%s' not recorded in this store: figure skipped" % name)
            return
        colour, lv, norm = self.colour_map(self.color)
        facet = self.facet
        # one panel per value of --facet and of every other varying axis the colour does not
        # show (ReLU and tanh curves never share a panel); more than PANELS_MAX: fewer, said so
        pax = ([facet] if facet else []) + [a for a in self.var if a not in (self.color, facet)]
        mixed = []
        while pax:
            n = 1
            for a in pax:
                n *= len(self.levels(a))
            if n <= PANELS_MAX:
                break
            mixed.insert(0, pax.pop())
        if mixed:
            self.note("curves", "%s: more than %d panels: curves of different %s share a panel"
                      % (name, PANELS_MAX, ", ".join(mixed)))
        panels = self.facets(pax)
        fl = [t for t, _ in panels]
        pidx = np.full(self.raw.n, -1)
        for k, (_, pm) in enumerate(panels):
            pidx[pm] = k
        facet = " x ".join(pax) if pax else None
        curves = []
        for pid, (step, v) in ser.items():
            i = self.row_of(pid)
            v = v.reshape(len(step), -1)[:, 0]
            curves.append((i, step, v))
        # y range from the runs that did not diverge
        keep = [v[np.isfinite(v) & (v > 0)] for i, _, v in curves if self.oc[i] != "diverged"]
        keep = np.concatenate(keep) if keep else np.zeros(0)
        if len(keep) == 0:
            keep = np.concatenate([v[np.isfinite(v) & (v > 0)] for _, _, v in curves] or [np.zeros(0)])
            basis = "all runs (none finished without diverging)"
        else:
            basis = "the runs that did not diverge"
        if len(keep) == 0:
            self.note("curves", "series '%s' has no positive finite value: figure skipped" % name)
            return
        lo, hi = float(keep.min()) / 1.6, float(keep.max()) * 1.6
        fig, axs, ncol = self.panel_grid(len(fl))
        pfig = make_subplots(rows=(len(fl) + ncol - 1) // ncol, cols=ncol, shared_yaxes=True,
                             subplot_titles=fl if facet else None,
                             horizontal_spacing=0.04, vertical_spacing=0.12) if self.interactive else None
        rows, legend_seen, ncurves = [], set(), [0] * len(fl)
        clipped, div_peaks = 0, []
        for i, step, v in curves:
            k = int(pidx[i]) if facet else 0
            if ncurves[k] >= self.args.max_curves:
                continue
            ncurves[k] += 1
            a = axs[k // ncol][k % ncol]
            cv = self.t[self.color][i] if self.color else None
            c = colour(cv)
            div = self.oc[i] == "diverged"
            over = np.nonzero(~np.isfinite(v) | (v > hi))[0]
            cut = int(over[0]) if len(over) else len(v)
            fin = v[np.isfinite(v)]
            if div:
                div_peaks.append(float(fin.max()) if len(fin) else float("inf"))
            s, y = step[:cut], v[:cut]
            m = y > 0
            a.plot(s[m] + 1, y[m], color=c, lw=0.9 if not div else 0.8, ls=":" if div else "-",
                   alpha=0.9)
            lab = [int(self.c["id"][i]), fl[k] if facet else "", fmt(cv) if self.color else "",
                   self.oc[i]]
            rows += [lab + [int(a_), repr(float(b_)), 0] for a_, b_ in zip(s[m], y[m])]
            if cut < len(v):  # clipped: marked at the top of the axis
                clipped += 1
                a.plot([step[cut] + 1], [hi / 1.05], marker="x", color=c, ms=6, mew=1.5)
                rows.append(lab + [int(step[cut]), repr(float(v[cut])), 1])
            if pfig is not None:
                idx = np.nonzero(m)[0]
                if len(idx) > 500:  # log-spaced records, plus the extremes
                    sel = np.unique(np.concatenate([np.unique(np.geomspace(1, len(idx), 400).astype(int) - 1),
                                                    [np.argmax(y[m]), np.argmin(y[m])]]))
                    idx = idx[sel]
                gname = fmt(cv) if self.color else "all"
                r0, c0 = k // ncol + 1, k % ncol + 1
                pfig.add_trace(go.Scatter(
                    x=(s[idx] + 1).tolist(), y=y[idx].tolist(), mode="lines",
                    line=dict(color=c, width=1.2, dash="dot" if div else "solid"),
                    name="%s=%s" % (self.color, gname) if self.color else name, legendgroup=gname,
                    showlegend=gname not in legend_seen, customdata=s[idx].tolist(),
                    hovertemplate=self.point_label(i) + "<br>step %{customdata}: %{y:.4g}<extra></extra>"),
                    row=r0, col=c0)
                legend_seen.add(gname)
                if cut < len(v):
                    pfig.add_trace(go.Scatter(
                        x=[float(step[cut] + 1)], y=[hi / 1.05], mode="markers", legendgroup=gname,
                        showlegend=False, marker=dict(symbol="x", size=9, color=c),
                        hovertemplate=self.point_label(i) + "<br>clipped at step %d: %.4g<extra></extra>"
                        % (int(step[cut]), float(v[cut]))), row=r0, col=c0)
        for k, f in enumerate(fl):
            a = axs[k // ncol][k % ncol]
            a.set_xscale("log")
            a.set_yscale("log")
            a.set_ylim(lo, hi)
            a.set_xlabel("step + 1")
            a.set_ylabel(name)
            a.grid(True, which="major", alpha=0.3)
            if facet:
                a.set_title("%s (%d runs)" % (f, ncurves[k]), fontsize=10 if len(f) < 30 else 8)
        self.colour_legend(fig, axs, self.color, lv, colour, norm)
        if pfig is not None:
            pfig.update_xaxes(type="log", title_text="step + 1")
            pfig.update_yaxes(type="log", range=[math.log10(lo), math.log10(hi)])
            pfig.update_yaxes(title_text=name, col=1)
            nr = (len(fl) + ncol - 1) // ncol
            pfig.update_layout(template="plotly_white", height=330 * nr + 80,
                               title="%s (dotted, x at the top: diverged runs clipped at the y range of %s)"
                               % (name, basis))
        self.add(fid, title,
                 "%s against step + 1 (log-log), one curve per point, colour: %s, one panel per %s. The y "
                 "range comes from %s (%.3g to %.3g)%s."
                 % (name, self.color or "-", (facet or "-") + ("; curves of different %s share a panel"
                                                              % ", ".join(mixed) if mixed else ""), basis, lo, hi,
                    "; %d diverged run(s) are dotted, %d of them cut where they leave it and marked x at the "
                    "top (their peaks reach %.3g)" % (len(div_peaks), clipped, max(div_peaks))
                    if div_peaks else "; no run diverged"), fig,
                 ["id", facet or "", self.color or "", "outcome", "step", name, "clipped"], rows, pfig,
                 ylim=[lo, hi], clipped=clipped, panels=fl, mixed=mixed,
                 diverged_peak_min=min(div_peaks) if div_peaks else None)

    # ---- spectra ------------------------------------------------------------------
    def panel_axes(self):
        """Axes whose values get their own panel in the spectra figures."""
        cand = [a for a in self.var if a != self.color]
        n = 1
        for a in cand:
            n *= len(self.levels(a))
        if n <= PANELS_MAX:
            return cand, []
        wd = [a for a in cand if self.raw.axis(a).path in ("model.width", "model.depth")]
        return wd, [a for a in cand if a not in wd]

    def singular_values(self):
        # record.series layer_sv writes sv/W<l>, record.spectra.layers layers/sv/W<l>
        prefix = next((p for p in ("sv/W", "layers/sv/W") if any(n.startswith(p) for n in self.series_names)),
                      None)
        if prefix is None:
            self.note("sv", "no per-layer singular values (sv/W<l> or layers/sv/W<l>) recorded: figure skipped")
            return
        names = [n for n in self.series_names if n.startswith(prefix)]
        names.sort(key=lambda n: int(n[len(prefix):]) if n[len(prefix):].isdigit() else 0)
        pax, mixed = self.panel_axes()
        panels = self.facets(pax)
        colour, lv, norm = self.colour_map(self.color)
        fig, axs, ncol = self.panel_grid(len(panels), 3.4, 2.7)
        rows = []
        for k, (plabel, pm) in enumerate(panels):
            a = axs[k // ncol][k % ncol]
            for li, n in enumerate(names):
                ser = self.series(n)
                cnt = 0
                for pid, (step, v) in ser.items():
                    i = self.row_of(pid)
                    if not pm[i] or self.c["status"][i] != 1 or cnt >= self.args.max_curves:
                        continue
                    cnt += 1
                    v = v.reshape(len(step), -1)[:, 0]
                    cv = self.t[self.color][i] if self.color else None
                    a.plot(step + 1, v, color=colour(cv), ls=LAYER_STYLES[li % 4], lw=1.3 if li < 4 else 0.7)
                    rows += [[int(pid), plabel, n, fmt(cv) if self.color else "", int(s), repr(float(x))]
                             for s, x in zip(step, v)]
            a.set_xscale("log")
            a.set_title(plabel, fontsize=9)
            a.set_xlabel("step + 1")
            a.set_ylabel("σ1")
            a.grid(True, alpha=0.3)
        if not rows:
            plt.close(fig)
            self.note("sv", "singular values: no done point recorded any: figure skipped")
            return
        self.colour_legend(fig, axs, self.color, lv, colour, norm)
        axs[0][0].legend(handles=[Line2D([], [], color="black", ls=LAYER_STYLES[j % 4], label=n)
                                  for j, n in enumerate(names[:8])], fontsize=7, loc="best", title="layer",
                         title_fontsize=7)
        self.add("sv", "Per-layer largest singular value over time",
                 "Largest singular value σ1 of each weight matrix (line style: the layer W1 solid, W2 dashed, "
                 "W3 dotted, W4 dash-dot) of every done point against step + 1 (log), colour: %s, one panel "
                 "per %s%s."
                 % (self.color or "-", " x ".join(pax) or "store",
                    "; mixed in a panel: " + ", ".join(mixed) if mixed else ""), fig,
                 ["id", "panel", "layer", self.color or "", "step", "sigma1"], rows)

    def ntk_threshold(self, i):
        """lambda at which the point's learning rate is critical for the NTK, or None (not
        mse, or its absolute rate eta unknown): 1/(c eta) with eta the absolute rate (with
        lr_units: lambda0 the grid's lr is eta * lambda_0, not eta)."""
        ltype = self.loss_type[i]
        if ltype not in (None, "None", "mse"):
            return None
        n = self.n_train[i]
        c = {"sum": 1.0, "half_sum": 0.5, "mean": 1.0 / n, "half_mean": 0.5 / n}.get(self.reduction[i])
        eta = float(self.eta[i])
        if c is None or not (np.isfinite(eta) and eta > 0):
            return None
        return 1.0 / (c * eta)

    def eigen(self, candidates, kind):
        name = next((n for n in candidates if n in self.series_names), None)
        label = "Hessian" if kind == "hessian" else "NTK"
        if name is None:
            self.note(kind, "no '%s' series in this store (not recorded): %s figure skipped" % (candidates[0], label))
            return
        self.reduction = self.raw.per_point_text("loss.reduction")
        self.loss_type = self.raw.per_point_text("loss.type", "mse")
        self.n_train = self.raw._per_point("data.n_train", 256.0)
        pax, mixed = self.panel_axes()
        panels = self.facets(pax)
        colour, lv, norm = self.colour_map(self.color)
        ncol = min(len(panels), 3)
        nblk = (len(panels) + ncol - 1) // ncol
        fig, axs = plt.subplots(2 * nblk, ncol, figsize=(3.6 * ncol, 5.6 * nblk), squeeze=False)
        fig.subplots_adjust(wspace=0.38, hspace=0.5, right=0.95)
        ser = self.series(name)
        rows = []
        for k, (plabel, pm) in enumerate(panels):
            top, bot = axs[2 * (k // ncol)][k % ncol], axs[2 * (k // ncol) + 1][k % ncol]
            drawn = set()
            nlr = len(set(self.t["lr"][pm].tolist()))
            for pid, (step, v) in ser.items():
                i = self.row_of(pid)
                if not pm[i]:
                    continue
                v = v.reshape(len(step), -1)[:, 0]
                m = np.isfinite(v)
                if not m.any():
                    continue
                lr, eta = float(self.t["lr"][i]), float(self.eta[i])
                if kind == "hessian":  # the GD stability threshold of the sharpness: 2/eta
                    thr = 2.0 / eta if np.isfinite(eta) and eta > 0 else None
                else:
                    thr = self.ntk_threshold(i)
                cv = self.t[self.color][i] if self.color else None
                c = colour(cv)
                ls = ":" if self.oc[i] == "diverged" else "-"
                top.plot(step[m] + 1, v[m], color=c, lw=1.0, ls=ls, marker="o" if m.sum() < 12 else None, ms=2.5)
                if thr is not None:
                    if (lr, thr) not in drawn and nlr <= 8:
                        top.axhline(thr, color=c, ls="--", lw=0.6, alpha=0.7)
                        drawn.add((lr, thr))
                    bot.plot(step[m] + 1, v[m] / thr, color=c, lw=1.0, ls=ls,
                             marker="o" if m.sum() < 12 else None, ms=2.5)
                rows += [[int(pid), plabel, fmt(cv) if self.color else "", fmt(lr), int(s), repr(float(x)),
                          repr(float(thr)) if thr is not None else "", repr(eta)] for s, x in zip(step[m], v[m])]
            top.set_xscale("log")
            top.set_yscale("log")
            top.set_title(plabel, fontsize=9)
            top.set_ylabel("%s (dashed: threshold)" % name, fontsize=8)
            bot.set_xscale("log")
            bot.set_yscale("log")
            bot.axhline(1.0, color="black", ls="--", lw=1.0)
            bot.axhline(2.0, color="black", ls=":", lw=1.0)
            bot.set_ylabel("%s / threshold" % name, fontsize=8)
            bot.set_xlabel("step + 1")
            for a in (top, bot):
                a.grid(True, alpha=0.3)
        for k in range(len(panels), nblk * ncol):
            axs[2 * (k // ncol)][k % ncol].axis("off")
            axs[2 * (k // ncol) + 1][k % ncol].axis("off")
        if not rows:
            plt.close(fig)
            self.note(kind, "series '%s' has no finite values: figure skipped" % name)
            return
        self.colour_legend(fig, axs, self.color, lv, colour, norm)
        thr_label = "2/η" if kind == "hessian" else "1/(cη): 2/η for half_sum, n/η for mean"
        thr_label += (" (η the absolute learning rate, column eta: with optimizer.lr_units: lambda0 the "
                      "grid's lr / λ0)" if "lambda0" in set(str(u) for u in self.units) else
                      " (η = the point's lr)")
        self.add(kind, "%s top eigenvalue against the stability threshold" % label,
                 "Top eigenvalue of the %s (column 0 of %s) against step + 1 (log), one panel pair per %s%s; "
                 "top: the eigenvalue with each learning rate's threshold %s dashed (up to 8 rates); bottom: the ratio to it "
                 "(dashed 1 = the edge of stability; dotted 2); colour: %s; dotted curves: diverged runs."
                 % ("loss Hessian" if kind == "hessian" else "neural tangent kernel", name,
                    " x ".join(pax) or "store", "; mixed in a panel: " + ", ".join(mixed) if mixed else "",
                    thr_label, self.color or "-"), fig,
                 ["id", "panel", self.color or "", "lr", "step", name, "threshold", "eta"], rows)
