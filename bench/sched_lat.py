#!/usr/bin/python3
"""sched_lat.py PREFIX [--skip S] -- the waits of the virtual workers of
bench/sched_wrap.c (DS_BENCH_OUT=PREFIX): point end -> next point in hand
(and the same from the moment the RESULT was sent), merged over the ranks. Waits of requests sent in the first S
seconds (the start-up burst: every virtual worker asks at once) and the
stop replies at the end are reported apart from the steady state."""
import glob, struct, sys
import numpy as np

def main():
    prefix = sys.argv[1]
    skip = float(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 2.0
    t, w, ws = [], [], []
    for f in sorted(glob.glob(prefix + ".*.lat")):
        a = np.fromfile(f, dtype=np.float64).reshape(-1, 3)
        t.append(a[:, 0]); w.append(a[:, 1]); ws.append(a[:, 2])
    if not t:
        sys.exit("no %s.*.lat files" % prefix)
    t = np.concatenate(t); w = np.concatenate(w); ws = np.concatenate(ws)
    late = 0.0
    for f in glob.glob(prefix + ".*.txt"):
        for line in open(f):
            kv = line.split()
            d = dict(zip(kv[0::2], kv[1::2]))
            late = max(late, float(d["late_mean_s"]))
    end = t.max() - skip  # the last seconds: stops, the final publish
    sel = (t >= skip) & (t <= end)
    steady, steady_s = w[sel], ws[sel]
    def q(x, p):
        return 1e3 * np.quantile(x, p) if len(x) else float("nan")
    print("waits %d (steady %d, sent in [%.1f, %.1f] s); steady wait ms: median %.3f p90 %.3f "
          "p99 %.3f p99.9 %.3f max %.3f; all: p99 %.3f max %.3f; worker-side lateness mean %.3f ms"
          % (len(w), len(steady), skip, end, q(steady, .5), q(steady, .9), q(steady, .99),
             q(steady, .999), 1e3 * steady.max() if len(steady) else float("nan"),
             q(w, .99), 1e3 * w.max(), 1e3 * late))
    print("  the same from the RESULT sent (without the harness's own lag): median %.3f p99 %.3f "
          "p99.9 %.3f max %.3f ms" % (q(steady_s, .5), q(steady_s, .99), q(steady_s, .999),
                                      1e3 * steady_s.max() if len(steady_s) else float("nan")))

main()
