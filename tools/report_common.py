"""report_common.py -- what tools/dynsweep-report and its parts (report_maps.py,
report_curves.py, report_mapstore.py) share: the libraries (matplotlib and plotly
when installed), the outcome names, codes, colours, letters and markers, small
helpers and the Figure record. tools/ must be on sys.path (dynsweep-report puts
it there)."""
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
except ImportError:  # pragma: no cover
    matplotlib = plt = colors = Line2D = Patch = None
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


class Figure:
    def __init__(self, fid, title, caption, png, header, rows, plotly_json=None, meta=None):
        self.fid, self.title, self.caption, self.png = fid, title, caption, png
        self.header, self.rows, self.plotly_json = header, rows, plotly_json
        self.meta = meta or {}

    @property
    def points(self):
        return len(self.rows)
