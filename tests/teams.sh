#!/usr/bin/env bash
# Worker teams (issue 4, "Teams and process grids"): train.ranks_per_point.
# (a) the same sweep on teams of 1, 2 and 4 ranks (-n 5) gives the same
#     series (loss, layer singular values, Hessian and NTK top-k, ...) to
#     1e-10 relative; (b) ranks_per_point as a grid axis [1, 2] on -n 4: every
#     point done, the team size and the leader's rank in the summary; (c) bad
#     values and too few ranks: clear errors, non-zero exit, nothing written;
#     (d) SIGUSR1 while a team of 2 trains: exit 3, the resumed run completes
#     and equals an uninterrupted one. (b2) teams stay on one node (issue 14;
#     SLURMD_NODENAME per rank), unless a team is larger than every node.
. "$(dirname "$0")/lib.sh"
unset SLURMD_NODENAME # the node of a rank (teams stay on one node): set per rank in (b2)
sweep=$DS_SRC/tests/sweeps/teams.yaml
long=$DS_SRC/tests/sweeps/teams_long.yaml
cmp_py() { "$PY" "$DS_SRC/tests/teams_compare.py" "$@"; }
# summary column of a store as "v v v ..." (point order)
col() { "$PY" - "$1" "$2" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(str(int(v)) for v in f["summary"][sys.argv[2]]))
PY
}
with_rpp() { sed -e "s/^  ranks_per_point: .*/  ranks_per_point: $1/" "$2"; }

# ---- (a) teams of 1, 2 and 4 give the same series -------------------------------
for t in 1 2 4; do
  with_rpp $t "$sweep" > "$T/t$t.yaml"
  drun 5 "$T/t$t.yaml" -o "$T/t$t.h5" -q 2>"$T/t$t.err" || true
  check "teams of $t: run completes" test -s "$T/t$t.h5"
  check "teams of $t: summary team_size all $t" test "$(col "$T/t$t.h5" team_size)" = "$t $t $t $t"
done
check "teams of 2 ran on two teams (leaders 1 and 3)" \
  test "$(col "$T/t2.h5" rank | tr ' ' '\n' | sort -u | tr '\n' ' ')" = "1 3 "
check "teams of 4 ran on one team (leader 1)" test "$(col "$T/t4.h5" rank)" = "1 1 1 1"
for t in 2 4; do
  check "series: teams of 1 vs $t agree to 1e-10 relative" cmp_py "$T/t1.h5" "$T/t$t.h5" 1e-10
done
# the comparison can fail: one series value changed by 1e-9 relative is caught
cp "$T/t1.h5" "$T/pert.h5"
"$PY" - "$T/pert.h5" > "$T/pert.txt" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    found = []  # series value datasets, whatever the store layout
    f.visititems(lambda n, o: found.append(n) if isinstance(o, h5py.Dataset) and
                 n.split("/")[-1] == "value" and o.dtype.kind == "f" and o.size > 3 else None)
    v = f[found[0]][...]
    k = int(np.nanargmax(np.abs(v)))
    v.flat[k] *= 1 + 1e-9
    f[found[0]][...] = v
    print("%s[%d]" % (found[0], k))
PY
check "perturbed one value ($(cat "$T/pert.txt"))" test -s "$T/pert.txt"
check "the comparison detects a 1e-9 relative change" bash -c "! '$PY' '$DS_SRC/tests/teams_compare.py' '$T/t1.h5' '$T/pert.h5' >/dev/null"

# ---- (b) ranks_per_point as an axis [1, 2] on -n 4 -------------------------------
sed -e 's/^  lr: \[0.02, 0.05\]/  lr: [0.02, 0.05]\n  ranks_per_point: [1, 2]/' "$sweep" > "$T/axis.yaml"
check "axis sweep file has the axis" grep -q "ranks_per_point: \[1, 2\]" "$T/axis.yaml"
drun 4 "$T/axis.yaml" -o "$T/axis.h5" -q 2>"$T/axis.err" || true
st=$("$DYNSWEEP" ls "$T/axis.h5" 2>/dev/null | grep -cE ' done ' || true)
check "axis [1, 2]: all 8 points done (got $st)" test "$st" -eq 8
# points alternate 1, 2 (the last axis is fastest)
check "axis [1, 2]: team_size recorded per point" \
  test "$(col "$T/axis.h5" team_size)" = "1 2 1 2 1 2 1 2"
nt2=$("$DYNSWEEP" export "$T/axis.h5" --where team_size=2 | tail -n +2 | wc -l)
check "axis [1, 2]: export --where team_size=2 selects the 4 team points (got $nt2)" test "$nt2" -eq 4
ts_rank=$("$PY" - "$T/axis.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    s = f["summary"][...]
# teams: ranks 1-2 (size 2, leader 1), rank 3 (size 1)
ok = all((int(r["team_size"]), int(r["rank"])) in ((2, 1), (1, 3)) for r in s)
print("ok" if ok else "bad: " + str([(int(r["team_size"]), int(r["rank"])) for r in s]))
PY
)
check "axis [1, 2]: size-2 points on leader 1, size-1 points on rank 3 ($ts_rank)" test "$ts_rank" = ok
"$PY" - "$T/axis.h5" "$T/t1.h5" > "$T/axcmp" <<'PY' || true
import sys, numpy as np
sys.path.insert(0, __import__("os").environ["DS_SRC"] + "/tools")
from dynsweep_store import Store
a, b = Store(sys.argv[1]), Store(sys.argv[2])
worst = 0.0
for i in range(8):  # point i of the axis sweep is point i // 2 of the plain one
    sa, sb = a.point_series(i), b.point_series(i // 2)
    for n in sb:
        va, vb = np.asarray(sa[n][1], float), np.asarray(sb[n][1], float)
        d = np.abs(va - vb) / np.maximum(np.maximum(np.abs(va), np.abs(vb)), 1e-3 * np.abs(vb).max() + 1e-300)
        worst = max(worst, float(d.max()) if d.size else 0.0)
print("ok" if worst <= 1e-10 else "bad %g" % worst)
PY
check "axis [1, 2]: both team sizes equal the teams-of-1 run ($(cat "$T/axcmp"))" test "$(cat "$T/axcmp")" = ok

# ---- (b2) issue 14: a team never spans nodes (node = SLURMD_NODENAME per rank) ------
# ranks 0,1 on node na and 2,3 on nb (mpirun's app contexts): the team of 2 is
# ranks 2,3 (leader 2), not 1,2; the size-1 team is rank 1; rank_nodes says so
on_nodes() { # on_nodes "N1 N2 ..." ARGS: one rank per node name
  local a=() n sep=
  for n in $1; do a+=($sep -n 1 -x "SLURMD_NODENAME=$n" "$DYNSWEEP" run "${@:2}"); sep=:; done
  mpirun --oversubscribe "${a[@]}"
}
on_nodes "na na nb nb" "$T/axis.yaml" -o "$T/nodes.h5" 2>"$T/nodes.err" || true
rn=$(h5dump -a rank_nodes "$T/nodes.h5" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p')
check "nodes: rank_nodes is na,na,nb,nb ($rn)" test "$rn" = na,na,nb,nb
check "nodes: hosts is still the host names" bash -c "h5dump -a hosts '$T/nodes.h5' | grep -q '(0): \"$(hostname)'"
check "nodes: team of 2 on ranks 2-3 (node nb), team of 1 on rank 1 (na)" \
  test "$(col "$T/nodes.h5" rank)" = "1 2 1 2 1 2 1 2"
check "nodes: same series as on one node" cmp_py "$T/axis.h5" "$T/nodes.h5" 0
# one worker per node: a team of 2 cannot fit a node, so it spans (the sweep asks)
on_nodes "na na nb" "$T/t2.yaml" -o "$T/span.h5" 2>"$T/span.err" || true
check "nodes: a team larger than any node spans nodes (logged)" grep -q "team of 2 spans nodes" "$T/span.err"
check "nodes: ... and its points are done" test "$(col "$T/span.h5" team_size)" = "2 2 2 2"

# ---- auto: the smallest power of two whose memory share fits --rank-memory ---------
# a point of teams.yaml is estimated at ~32 MB (the full Hessian: 4.5 P^2 doubles)
sed -e 's/^  ranks_per_point: .*/  ranks_per_point: auto/; s/^  steps: 60/  steps: 20/' "$sweep" > "$T/auto.yaml"
drun 4 "$T/auto.yaml" -o "$T/auto20.h5" -q --rank-memory 20 2>/dev/null || true
check "auto, --rank-memory 20 MB: teams of 2" test "$(col "$T/auto20.h5" team_size 2>/dev/null)" = "2 2 2 2"
drun 3 "$T/auto.yaml" -o "$T/auto3.h5" --rank-memory 3 2>"$T/auto3.err" || true
check "auto, --rank-memory 3 MB on -n 3: capped at the 2 workers" test "$(col "$T/auto3.h5" team_size 2>/dev/null)" = "2 2 2 2"
check "... with a warning" grep -q "auto wants a team of 16 ranks" "$T/auto3.err"
# issue 11: --rank-memory is also what a rank has; 2 x 8 MB cannot fit 3 MB
check "... and the points, which cannot fit 3 MB ranks, fail without running" \
  test "$(col "$T/auto3.h5" status 2>/dev/null)" = "3 3 3 3"
check "... saying so" grep -q "does not fit: estimated .* MB = 2 x .* MB, a rank has 3.00 MB (--rank-memory)" "$T/auto3.err"

# ---- (c) bad values and too few ranks ---------------------------------------------
for v in 0 -2 fast 1.5; do
  with_rpp "$v" "$sweep" > "$T/bad.yaml"
  check "ranks_per_point: $v: plan exits 2" test "$(code "$DYNSWEEP" plan "$T/bad.yaml")" -eq 2
  check "ranks_per_point: $v: file:line:col message" \
    grep -qE "bad.yaml:[0-9]+:[0-9]+: train.ranks_per_point: " "$T/err"
done
rc=$(code drun 3 "$T/t4.yaml" -o "$T/few.h5")
check "teams of 4 on -n 3: exit 2 (got $rc)" test "$rc" -eq 2
check "... says what is needed" grep -q "ranks_per_point 4 (point 0) needs a team of 4 worker ranks, but this run has only 2" "$T/err"
check "... nothing written" bash -c "test ! -e '$T/few.h5' && test ! -e '$T/few.h5.journal'"
sed -e 's/^  lr: \[0.02, 0.05\]/  lr: [0.02, 0.05]\n  ranks_per_point: [2, 4]/' "$sweep" > "$T/mix.yaml"
rc=$(code drun 5 "$T/mix.yaml" -o "$T/mix.h5")
check "axis [2, 4] on -n 5 (4 workers, needs 6): exit 2 (got $rc)" test "$rc" -eq 2
check "... says teams of 2 and 4 ranks are needed" grep -q "needs teams of 2 and 4 ranks at the same time (6 worker ranks" "$T/err"
check "... nothing written" test ! -e "$T/mix.h5"
rc=$(code drun 1 "$T/t2.yaml" -o "$T/one.h5" -q)
check "-n 1 with ranks_per_point 2: runs on rank 0 (exit $rc)" test "$rc" -eq 0
check "... with a warning" grep -q "with -n 1 rank 0 runs every point itself on a team of 1" "$T/err"
check "... team_size 1 recorded" test "$(col "$T/one.h5" team_size)" = "1 1 1 1"

# ---- (d) drain while a team of 2 trains, then resume -------------------------------
drun 3 "$long" -o "$T/lref.h5" -q
start_bg "$T/d1.log" -n 3 "$DYNSWEEP" run "$long" -o "$T/d.h5" --checkpoint-every 0.5
# SIGUSR1 once the team has checkpointed its first point: the journal grows
# past its size when first seen (header) only by a checkpoint record (every
# 0.5 s) or a result, and a point takes ~4 s on an idle core, so the signal
# arrives while the team trains, however fast or loaded the machine is.
j0=
for i in $(seq 1 1200); do
  bg_running || break
  if [ -e "$T/d.h5.journal" ]; then
    sz=$(stat -c %s "$T/d.h5.journal")
    if [ -z "$j0" ]; then j0=$sz; elif [ "$sz" -gt "$j0" ]; then break; fi
  fi
  sleep 0.05
done
kill -USR1 "$SID" 2>/dev/null || true
wait_bg
check "SIGUSR1 with a team running: exit 3 (got $RC)" test "$RC" -eq 3
nfin=$("$DYNSWEEP" ls "$T/d.h5" | grep -cE ' done ' || true)
check "drained with points left ($nfin of 2 done)" test "$nfin" -lt 2
drun 3 "$long" -o "$T/d.h5" -q 2>"$T/d2.log"
check "the team's point resumed from its checkpoint" grep -q "to run (1 from a checkpoint)" "$T/d2.log"
check "resumed run completes" bash -c "test \$('$DYNSWEEP' ls '$T/d.h5' | grep -cE ' done ') -eq 2"
check "resumed store equals the uninterrupted run (1e-10)" cmp_py "$T/lref.h5" "$T/d.h5" 1e-10
check "resumed store equals the uninterrupted run (bitwise)" cmp_py "$T/lref.h5" "$T/d.h5" 0
report
