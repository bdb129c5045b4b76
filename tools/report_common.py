"""report_common.py -- what tools/dynsweep-report and its parts (report_maps.py,
report_curves.py, report_mapstore.py) share: the libraries (matplotlib and plotly
when installed), the outcome names, codes, colours, letters and markers, small
helpers and the Figure record. tools/ must be on sys.path (dynsweep-report puts
it there)."""
import io
import sys

import dynsweep_store  # noqa: F401  (puts python/ on sys.path)
from dynsweep import frames  # noqa: E402
import numpy as np  # noqa: E402

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colors
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import Locator, LogLocator
    # a title at the top of its axes (plus axes.titlepad), where matplotlib's automatic
    # placement puts it too when no tick label or axis label is on top (none is here);
    # the automatic search costs a tick layout of every axes at every draw
    matplotlib.rcParams["axes.titley"] = 1.0
except ImportError:  # pragma: no cover
    matplotlib = plt = colors = Line2D = Patch = None
    Locator = LogLocator = object
try:
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.offline import get_plotlyjs
    from plotly.subplots import make_subplots
except ImportError:  # pragma: no cover
    go = pio = get_plotlyjs = make_subplots = None

HESSIAN_SERIES = ("hessian/top", "hessian_top", "hess_top")
NTK_SERIES = ("ntk/top", "ntk_top")
MAX_CURVES = 200
# the named outcomes by their code in frames.Store.columns() (docs/store.md "Outcome")
OUTCOME_CODES = frames.OUTCOME_CATEGORIES  # converged catapult diverged plateaus failed pending unconverged
# the order they are drawn in (legends, the shares of a mixed cell): converged to failed
OUTCOMES = ["converged", "plateaus", "unconverged", "catapult", "diverged", "failed", "pending"]
assert sorted(OUTCOMES) == sorted(OUTCOME_CODES), OUTCOME_CODES
# a mixed cell's letter: the most common outcome, ties to the worse, as `dynsweep phase`
# (F > D > C > P > u > . > c)
OUTCOME_SEVERITY = {"converged": 0, "pending": 1, "unconverged": 2, "plateaus": 3, "catapult": 4,
                    "diverged": 5, "failed": 6}
# Okabe-Ito (colour-blind safe); the letters of `dynsweep phase` on top. Unconverged
# (finished, neither converged nor diverged, issue 24): sky blue, the light sibling of
# converged's blue
OUTCOME_COLORS = {"converged": "#0072B2", "catapult": "#E69F00", "diverged": "#D55E00",
                  "plateaus": "#009E73", "failed": "#CC79A7", "pending": "#BBBBBB",
                  "unconverged": "#56B4E9"}
OUTCOME_LETTERS = {"converged": "c", "catapult": "C", "diverged": "D", "plateaus": "P",
                   "failed": "F", "pending": ".", "unconverged": "u"}
OUTCOME_MARKERS = {"converged": "circle", "catapult": "star", "diverged": "x",
                   "plateaus": "diamond", "failed": "triangle-up", "pending": "circle-open",
                   "unconverged": "square"}
LR_PATHS = ("optimizer.lr", "optimizer.lr_in", "optimizer.lr_out")
LAYER_STYLES = ["-", "--", ":", "-."]
PANELS_MAX = 16


def fail(code, msg):
    print("dynsweep-report: " + msg, file=sys.stderr)
    sys.exit(code)


def fmt(v):
    if isinstance(v, (float, np.floating)):
        return "%g" % v
    return str(v)


def hexc(rgba):
    return colors.to_hex(rgba)


class InView(Locator):
    """A log axis's locator that returns only the ticks in the view interval. LogLocator
    returns every 1..9 x 10^k over the decades around the view, and matplotlib makes a
    Tick (three Line2D, two Text) for each before it drops those outside: on a loss
    panel most of its Tick objects and most of the report's time. The ticks drawn are
    the same: matplotlib draws those within 1e-10 of the view's span, kept here
    within 1e-6."""

    def __init__(self, inner):
        self.inner = inner

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def __call__(self):
        locs = np.asarray(self.inner(), dtype=float)
        lo, hi = sorted(self.axis.get_view_interval())
        tr = self.axis.get_transform()
        a, b = tr.transform([lo, hi])
        tol = 1e-6 * abs(b - a)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = tr.transform(locs)
        return locs[(t >= a - tol) & (t <= b + tol)]

    def tick_values(self, vmin, vmax):
        return self.inner.tick_values(vmin, vmax)


def png(fig, dpi):
    """fig as PNG bytes, cropped to its artists as savefig(bbox_inches="tight") would, in
    two passes over the artists instead of three (savefig's "tight" draws the figure once
    without rendering, then takes the tight box, then draws): the tight box (in inches,
    padded by savefig.pad_inches) from a renderer at dpi, then one draw into that box.
    Log axes' locators only return the ticks in view (InView); PNG zlib level 3, not 6."""
    for ax in fig.axes:
        if hasattr(ax, "_colorbar"):  # a colorbar sets its own locators
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_locator, axis.set_major_locator),
                             (axis.get_minor_locator, axis.set_minor_locator)):
                loc = get()
                if isinstance(loc, LogLocator):
                    put(InView(loc))
    fig.set_dpi(dpi)
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(matplotlib.rcParams["savefig.pad_inches"])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches=bbox, pil_kwargs={"compress_level": 3})
    return buf.getvalue()


class Figure:
    def __init__(self, fid, title, caption, png, header, rows, plotly_json=None, meta=None):
        self.fid, self.title, self.caption, self.png = fid, title, caption, png
        self.header, self.rows, self.plotly_json = header, rows, plotly_json
        self.meta = meta or {}

    @property
    def points(self):
        return len(self.rows)
