#!/usr/bin/python3
"""sched_sim.py -- a discrete-event projection of rank 0 with many workers
(issue 14, docs/performance.md "Rank 0 at scale"). Nothing here runs
dynsweep: it replays MEASURED figures at a simulated worker count.

  measured, from a real run (bench/sched_scale.sh):
    --service JSON   rank 0's record (DYNSWEEP_SCHED_STATS): the histogram of
                     its per-message service time, probe -> ASSIGN sent
                     (receive, journal append, queue, reply, and the group
                     commit / publish tick when one fell on that message);
                     sampled log-uniformly within each bin
    --durations F    recorded point durations (x --scale), point i takes line
                     i mod n
    --publish-s S    the cost of one publish (blocks rank 0's loop); one
                     publish every max(2 s, 100 S) as ds_store_publish does;
                     0 = publishes off the loop
  simulated: N workers, each asks (RESULT) when its point ends, waits FIFO
  for rank 0 (one server), gets ASSIGN after the service time + --msg-us,
  then runs its next point.

  --subsched G --prefetch B: the next level: G sub-schedulers (one per node
  group) each serve N/G workers from a local queue of B prefetched points
  with the same service-time histogram (an upper bound: they do not touch
  the store) and forward results to rank 0 in batches; rank 0's stalls (a
  publish) reach a worker only if a sub-scheduler's buffer runs dry, which
  is reported (B vs its consumption during the longest stall).

Prints: workers, points, assignments/s, rank 0 (or a sub-scheduler) busy
share, wait (point end -> ASSIGN received) median / p99 / p99.9 / max.
"""
import argparse, bisect, heapq, json, math, random


def load_hist(path):
    rec = None
    for line in open(path):
        if line.strip():
            rec = json.loads(line)  # the last record in the file
    edges, cum, tot = [], [], 0
    for up, n in rec["service_hist_us"]:
        edges.append(up)
        tot += n
        cum.append(tot)
    return rec, edges, cum, tot


def split(hist, cut_us=1000.0):
    """the per-message part and the long ticks (> cut_us: the group commit's
    fdatasync, a publish), which come at a rate per second, not per message"""
    short = [(u, n) for u, n in hist if u <= cut_us]
    long = [(u, n) for u, n in hist if u > cut_us]
    def cdf(h):
        e, c, t = [], [], 0
        for u, n in h:
            e.append(u); t += n; c.append(t)
        return e, c, t
    return cdf(short), cdf(long)


def sampler(edges, cum, tot, rng, mult=1.0):
    def draw():
        k = bisect.bisect_left(cum, rng.random() * tot)
        up = edges[k]
        lo = up / 10 ** (1 / 20)
        return mult * 1e-6 * math.exp(rng.uniform(math.log(lo), math.log(up)))
    return draw


def simulate(n, npts, dur, service, msg, publish_s, rng, stall=None, stall_every=float("inf")):
    """one FIFO server, n workers; returns (waits, busy, span). Every
    stall_every seconds the loop is held for stall() (the group commit)."""
    ev = []  # (time the worker asks, worker)
    nxt = 0
    t_free = 0.0
    busy = 0.0
    waits = []
    pub_every = max(2.0, 100 * publish_s) if publish_s > 0 else float("inf")
    next_pub = pub_every
    next_stall = stall_every
    for w in range(n):  # start-up: everyone asks at 0 (reported apart)
        heapq.heappush(ev, (0.0, w))
    done = 0
    while ev:
        t, w = heapq.heappop(ev)
        start = max(t, t_free)
        if start >= next_pub:  # the publish holds the loop
            start = max(start, next_pub + publish_s)
            busy += publish_s
            next_pub += pub_every + publish_s
        if start >= next_stall:  # the group commit's fdatasync holds the loop
            st = stall()
            start = max(start, next_stall + st)
            busy += st
            next_stall += stall_every
        s = service()
        t_free = start + s
        busy += s
        t_assign = t_free + msg
        if t > 0:
            waits.append((t, t_assign - t))
            done += 1
        if nxt < npts:
            heapq.heappush(ev, (t_assign + dur[nxt % len(dur)], w))
            nxt += 1
    return waits, busy, t_free


def q(a, p):
    return a[min(len(a) - 1, int(p * len(a)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--service", required=True)
    ap.add_argument("--durations", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=10000)
    ap.add_argument("--points", type=int, default=300000)
    ap.add_argument("--msg-us", type=float, default=5.0, help="one-way message latency (us)")
    ap.add_argument("--publish-s", type=float, default=0.0)
    ap.add_argument("--service-mult", type=float, default=1.0,
                    help="scale the measured service times (e.g. a faster or loaded core)")
    ap.add_argument("--no-commit-stall", action="store_true",
                    help="the group commit off the loop (a store thread): no long ticks")
    ap.add_argument("--subsched", type=int, default=0)
    ap.add_argument("--prefetch", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rec, edges, cum, tot = load_hist(a.service)
    (se, sc, st), (le, lc, lt) = split(rec["service_hist_us"])
    service = sampler(se, sc, st, rng, a.service_mult)
    stall = sampler(le, lc, lt, rng) if lt else None
    stall_every = rec["span_s"] / lt if lt else float("inf")
    if a.no_commit_stall:
        stall, stall_every = None, float("inf")
    dur = [float(x) * a.scale for x in open(a.durations).read().split()]
    rng.shuffle(dur)
    mean_d = sum(dur) / len(dur)
    mean_s = sum(service() for _ in range(100000)) / 100000
    print("measured service: %d samples, mean %.1f us without the %d long ticks (> 1 ms, one "
          "every %.2f s, mean %.1f ms); durations mean %.3f s"
          % (tot, mean_s * 1e6, lt, stall_every,
             1e3 * sum(stall() for _ in range(1000)) / 1000 if stall else 0, mean_d))
    if a.subsched:
        per = a.workers // a.subsched
        pts = a.points * per // a.workers
        waits, busy, span = simulate(per, pts, dur, service, a.msg_us * 1e-6, 0.0, rng)  # no store
        rate = a.workers / mean_d
        # rank 0: the results of all groups (journal append each) + one batch message per B/2
        j_us = 1e6 * rec["store_s"] / max(1, rec["results"])
        r0 = rate * j_us * 1e-6 + (rate / max(1, a.prefetch / 2)) * mean_s
        stall = max(a.publish_s, 1e-3)
        need = per / mean_d * stall
        label = "%d sub-schedulers of %d workers, prefetch %d" % (a.subsched, per, a.prefetch)
        extra = ("; rank 0 busy %.1f%% (journal %.1f us/result + a batch message per %d results); "
                 "a publish of %.2f s drains %.0f points of a group's buffer: %s"
                 % (100 * r0, j_us, max(1, a.prefetch // 2), a.publish_s, need,
                    "covered" if a.prefetch >= need else "NOT covered (workers wait)"))
    else:
        waits, busy, span = simulate(a.workers, a.points, dur, service, a.msg_us * 1e-6,
                                     a.publish_s, rng, stall, stall_every)
        label = "one rank 0, %d workers" % a.workers
        extra = ""
    # steady state: as bench/sched_lat.py, requests of the first and last 2 s apart
    t_end = max(t for t, _ in waits)
    cut = sorted(w for t, w in waits if 2.0 <= t <= t_end - 2.0)
    print("%s: %d points, %.0f assignments/s (steady), server busy %.1f%%, wait ms median %.3f "
          "p99 %.3f p99.9 %.3f max %.3f%s"
          % (label, len(cut), len(cut) / (t_end - 4.0), 100 * busy / span, 1e3 * q(cut, .5),
             1e3 * q(cut, .99), 1e3 * q(cut, .999), 1e3 * cut[-1], extra))


main()
