#!/usr/bin/env bash
# `dynsweep ls --where/--sort`, `export`, `phase` on a real store made here,
# every figure checked against the store read independently with h5py (and
# h5dump for one series).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
# the subcommands: dynsweep itself once they are wired in, else the room's driver
if "$DYNSWEEP" phase --help >/dev/null 2>&1; then A=("$DYNSWEEP")
else A=("${DYNSWEEP_ANALYSIS:?DYNSWEEP_ANALYSIS must point to dynsweep-analysis}"); fi
echo "analysis commands from: ${A[*]}"
code() { set +e; "$@" >"$T/out" 2>"$T/err"; echo $?; set -e; }

cat > "$T/a.yaml" <<'EOF'
# 3 lr x 2 width x 2 depth x 2 model types x 2 replicas = 48 points: lr 1.2
# diverges for some, so phase cells mix outcomes; tol is reached by many.
name: analysis
seed: 3
grid:
  lr: [0.05, 0.3, 1.2]
  width: [4, 8]
  depth: [1, 2]
  model.type: [linear, relu]
  replicas: 2
model: {bias: false, init_scale: 1.0}
data: {kind: teacher, n_train: 32, n_test: 16, d_in: 4, d_out: 2, rank: 2, noise: 0.0}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd}
train: {steps: 400, tol: 1.0e-3, diverge_above: 1.0e4}
record: {series: [loss, layer_fro, layer_sv], every: 20, top_k: 2}
EOF
drun 3 "$T/a.yaml" -o "$T/a.h5" -q
S=$T/a.h5
# The reference classification (docs/store.md "Outcome", written from the docs, not
# from the C or Python code): every done row's converged/unconverged is decided
# here from its h5py loss series, train.tol 1e-3 and train.steps 400, and must
# agree with the stored code (5 unconverged, 6 converged; 0 = an older store's
# "did not diverge", re-classified by the same rule).
cat > "$T/ref.py" <<'EOF'
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["DS_SRC"], "tools"))
from dynsweep_store import read_points
TOL, STEPS = 1e-3, 400
def settled(st, lo, T):
    st, lo = list(st), list(lo)
    if len(st) < 3 or st[-1] != T: return False
    a = max([i for i in range(len(st) - 1) if st[i] <= T - -(-T // 10)], default=None)
    if a is None: return False
    p = max([i for i in range(a) if st[i] <= st[a] - (T - st[a])], default=None)
    if p is None: return False
    L0, La, Lp, LT = lo[0], lo[a], lo[p], lo[-1]
    gain, d1, d0 = L0 - LT, La - LT, Lp - La
    return bool(np.isfinite([L0, La, Lp, LT]).all() and gain > 0 and abs(d1) <= 0.01 * abs(LT) + 1e-12 * abs(L0)
                and d1 <= max(d0, 1e-6 * gain))
def categories(path):
    """the named outcome of every summary row, in row order"""
    f = h5py.File(path, "r"); s = f["summary"][...]
    P = {pid: {x[0]: (np.asarray(x[3]), np.asarray(x[4]).ravel()) for x in lst}
         for pid, lst in read_points(f).items()}
    out = []
    for row in s:
        st = int(row["status"])
        if st != 1:
            out.append({2: "diverged", 3: "failed"}.get(st, "pending")); continue
        if row["outcome"] == 2:
            out.append("catapult"); continue
        step, loss = P[int(row["id"])]["loss"]
        conv = row["final_loss"] < TOL or settled(step, loss, STEPS)
        if row["outcome"] not in (0, 5, 6) or (row["outcome"] != 0 and conv != (row["outcome"] == 6)):
            raise SystemExit("FAIL row %d: stored code %d, the rule says %s" % (row["id"], row["outcome"], conv))
        out.append("unconverged" if not conv else "plateaus" if row["plateaus"] >= 1 else "converged")
    return out
if __name__ == "__main__":  # ref.py STORE: the counts line of `dynsweep ls`; STORE EXPR: ids
    c = categories(sys.argv[1])
    if len(sys.argv) > 2:
        print(" ".join(str(i) for i, x in enumerate(c) if eval(sys.argv[2])))
    else:
        print("outcomes: " + ", ".join("%d %s" % (c.count(k), k) for k in
              ("converged", "catapult", "diverged", "plateaus", "failed", "pending", "unconverged")))
EOF
ref() { DS_SRC=$DS_SRC "$PY" "$T/ref.py" "$@"; }
n_unc=$(ref "$S" 'x == "unconverged"' | wc -w)
check "the store has unconverged points ($n_unc: at lr 0.05/0.3, neither below tol nor settled)" test "$n_unc" -ge 2

# ---- help and errors -----------------------------------------------------------
for c in ls export phase; do
  check "$c --help exits 0 with usage" test "$(code "${A[@]}" $c --help)" -eq 0
  grep -q "usage: dynsweep $c" "$T/out" || bad "$c --help text"
done
check "ls --where with an unknown name: exit 2" test "$(code "${A[@]}" ls "$S" --where 'foo=1')" -eq 2
check "... lists valid names" bash -c "grep -q 'valid names' '$T/err' && grep -q final_loss '$T/err' && grep -q model.type '$T/err'"
check "ls --where model.type=rleu: exit 2" test "$(code "${A[@]}" ls "$S" --where 'model.type=rleu')" -eq 2
check "... lists the values" grep -q "linear, relu" "$T/err"
check "ls --where status=bogus: exit 2" test "$(code "${A[@]}" ls "$S" --where 'status=bogus')" -eq 2
check "ls --where 'model.type<1': exit 2" test "$(code "${A[@]}" ls "$S" --where 'model.type<relu')" -eq 2
check "ls --where 'lr': exit 2" test "$(code "${A[@]}" ls "$S" --where 'lr')" -eq 2
check "ls --sort bogus: exit 2" test "$(code "${A[@]}" ls "$S" --sort bogus)" -eq 2
check "export --format xml: exit 2" test "$(code "${A[@]}" export "$S" --format xml)" -eq 2
check "export --series nope: exit 2" test "$(code "${A[@]}" export "$S" --series nope)" -eq 2
check "... names the recorded series" grep -q "sv/W1" "$T/err"
check "phase without --y: exit 2" test "$(code "${A[@]}" phase "$S" --x lr)" -eq 2
check "phase --metric reason: exit 2" test "$(code "${A[@]}" phase "$S" --x lr --y width --metric reason)" -eq 2
check "ls of a missing store: exit 2" test "$(code "${A[@]}" ls "$T/none.h5")" -eq 2

# ---- ls: filters and sorting against h5py ----------------------------------------
ids() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $1}' "$1" | tr '\n' ' ' | sed 's/ $//'; }
h5ids() { # python expression over s (summary), mt (model.type code: 0 linear, 1 relu); key
  $PY - "$S" "$1" "${2:-}" <<'EOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r"); s = f["summary"][...]
names = list(f["grid/axis_names"].asstr()[...]); ax = f["grid/axis_values"][...]
mt = ax[:, names.index("model.type")]
sel = np.nonzero(eval(sys.argv[2]))[0]
if sys.argv[3]:
    key, desc = sys.argv[3].lstrip("-"), sys.argv[3].startswith("-")
    v = s[key][sel].astype(float)
    sel = sorted(sel, key=lambda i: (np.isnan(s[key][i]), -s[key][i] if desc else s[key][i], i))
print(" ".join(str(int(s["id"][i])) for i in sel))
EOF
}
"${A[@]}" ls "$S" > "$T/ls_all"
check "ls without options lists all 48 points" test "$(ids "$T/ls_all" | wc -w)" -eq 48
check "ls footer counts" grep -qE "^48 points: [0-9]+ done, [0-9]+ diverged, 0 failed, 0 pending$" "$T/ls_all"

"${A[@]}" ls "$S" --where 'depth=2,lr<0.5' > "$T/ls1"
check "ls --where 'depth=2,lr<0.5' = h5py selection" \
  test "$(ids "$T/ls1")" = "$(h5ids '(s["depth"] == 2) & (s["lr"] < 0.5)')"
check "... footer says of 48" grep -q "(matching --where, of 48 in the store)" "$T/ls1"

"${A[@]}" ls "$S" --where 'model.type=relu,status=done' --sort final_loss > "$T/ls2"
want=$(h5ids '(mt == 1) & (s["status"] == 1)' final_loss)
check "ls relu+done sorted by final_loss = h5py ($want)" test "$(ids "$T/ls2")" = "$want"
check "... non-empty" test -n "$want"

"${A[@]}" ls "$S" --where 'lr>=0.3' --sort -final_loss --limit 4 > "$T/ls3"
want=$(h5ids 's["lr"] >= 0.3' -final_loss | cut -d' ' -f1-4)
check "ls --sort -final_loss --limit 4 = h5py top 4 ($want)" test "$(ids "$T/ls3")" = "$want"

"${A[@]}" ls "$S" --where 'status!=done,width>4' > "$T/ls4"
check "ls status!=done,width>4 = h5py" test "$(ids "$T/ls4")" = "$(h5ids '(s["status"] != 1) & (s["width"] > 4)')"

"${A[@]}" ls "$S" --where 'train.steps=400,model.bias=false,steps_to_tol<=30' > "$T/ls5"
check "ls on option paths and steps_to_tol = h5py" test "$(ids "$T/ls5")" = \
  "$(h5ids '(s["status"] == 1) & (s["final_loss"] < 1e-3) & (s["steps"] <= 30)')"
check "... shows the named columns" bash -c "head -1 '$T/ls5' | grep -q 'train.steps' && head -1 '$T/ls5' | grep -q steps_to_tol"

# ---- export: CSV / TSV parse back to the stored values ---------------------------
"${A[@]}" export "$S" -o "$T/sum.csv"
"${A[@]}" export "$S" --format tsv --where 'model.type=linear' > "$T/sum.tsv"
"${A[@]}" export "$S" --series loss --format tsv > "$T/loss.tsv"
"${A[@]}" export "$S" --series layer_fro -o "$T/fro.csv"
"${A[@]}" export "$S" --series sv/W2 --where 'lr=0.05' --params train.tol -o "$T/sv2.csv"
check "export -o wrote the file" test -s "$T/sum.csv"
$PY - "$S" "$T" <<'EOF' > "$T/py.txt" 2>&1 && ok "export: CSV/TSV match h5py exactly" || { cat "$T/py.txt"; bad "export: CSV/TSV match h5py"; }
import csv, math, os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["DS_SRC"], "tools"))
from dynsweep_store import read_points
S, T = sys.argv[1:]
f = h5py.File(S, "r"); s = f["summary"][...]
P = {pid: {x[0]: (np.asarray(x[3]), np.asarray(x[4])) for x in lst} for pid, lst in read_points(f).items()}
names = list(f["grid/axis_names"].asstr()[...]); ax = f["grid/axis_values"][...]
mtname = {0: "linear", 1: "relu"}
stname = {0: "pending", 1: "done", 2: "diverged", 3: "failed", 4: "running"}
def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b
def fail(msg):
    print("FAIL", msg); sys.exit(1)
rows = list(csv.DictReader(open(T + "/sum.csv", newline="")))
if len(rows) != len(s): fail("summary rows %d != %d" % (len(rows), len(s)))
hdr = list(rows[0].keys())
want_hdr = ["id", "combo", "replica", "lr", "width", "depth", "model.type", "init_scale", "status", "outcome", "steps",
            "final_loss", "min_loss", "final_test_loss", "diverged_step", "event_step", "peak_ratio", "plateaus",
            "plateau_end", "wall_s", "rank", "team_size", "attempts", "reason", "steps_to_tol"]
if hdr != want_hdr: fail("header %s" % hdr)
sys.path.insert(0, T)
from ref import categories
cats = categories(S)
for r, row, cat in zip(rows, s, cats):
    for k in ("id", "combo", "replica", "width", "depth", "steps", "diverged_step", "rank", "team_size", "attempts",
              "event_step", "plateaus", "plateau_end"):
        if int(r[k]) != int(row[k]): fail("%s %s vs %s" % (k, r[k], row[k]))
    if r["outcome"] != cat: fail("outcome row %s: %s, want %s" % (r["id"], r["outcome"], cat))
    for k in ("lr", "init_scale", "final_loss", "min_loss", "final_test_loss", "wall_s", "peak_ratio"):
        if not same(float(r[k]), float(row[k])): fail("%s %r vs %r" % (k, r[k], row[k]))
    i = int(row["id"])
    if r["model.type"] != mtname[int(ax[i, names.index("model.type")])]: fail("model.type row %d" % i)
    if r["status"] != stname[int(row["status"])]: fail("status row %d" % i)
    if r["reason"] != row["reason"].split(b"\0")[0].decode(): fail("reason row %d: %r" % (i, r["reason"]))
    reached = row["status"] == 1 and row["final_loss"] < 1e-3
    if r["steps_to_tol"] != (str(int(row["steps"])) if reached else ""): fail("steps_to_tol row %d" % i)
print("summary csv ok:", len(rows), "rows")
tsv = list(csv.DictReader(open(T + "/sum.tsv", newline=""), delimiter="\t"))
lin = [int(r["id"]) for r in s if ax[int(r["id"]), names.index("model.type")] == 0]
if [int(r["id"]) for r in tsv] != lin: fail("tsv --where model.type=linear ids")
# loss series, long format
lt = list(csv.DictReader(open(T + "/loss.tsv", newline=""), delimiter="\t"))
if list(lt[0].keys())[:3] != ["point", "step", "value"]: fail("loss header %s" % list(lt[0].keys()))
n = 0
for pid in sorted(P):
    st, va = P[pid]["loss"]
    got = [r for r in lt if int(r["point"]) == pid]
    if len(got) != len(st): fail("point %d: %d loss rows, store has %d" % (pid, len(got), len(st)))
    for r, a, b in zip(got, st, va):
        if int(r["step"]) != a or not same(float(r["value"]), b): fail("point %d step %s" % (pid, r["step"]))
        if float(r["lr"]) != s["lr"][pid] or r["model.type"] != mtname[int(ax[pid, names.index("model.type")])]:
            fail("params of point %d" % pid)
    n += len(st)
if n != len(lt): fail("loss rows %d vs %d" % (len(lt), n))
print("loss tsv ok:", n, "records")
# layer_fro: depth 1 -> 1 column, depth 2 -> 2: value_0, value_1, empty value_1 for depth 1
fr = list(csv.DictReader(open(T + "/fro.csv", newline="")))
if list(fr[0].keys())[:4] != ["point", "step", "value_0", "value_1"]: fail("fro header")
for r in fr:
    pid = int(r["point"]); d = int(s["depth"][pid])
    gst, gva = P[pid]["layer_fro"]
    k = list(gst).index(int(r["step"]))
    v = gva.reshape(len(gst), -1)[k]
    if not same(float(r["value_0"]), v[0]): fail("fro value_0 point %d" % pid)
    if d == 1 and r["value_1"] != "": fail("fro value_1 of a depth-1 point not empty")
    if d == 2 and not same(float(r["value_1"]), v[1]): fail("fro value_1 point %d" % pid)
print("layer_fro csv ok:", len(fr), "rows")
sv = list(csv.DictReader(open(T + "/sv2.csv", newline="")))
pts = sorted({int(r["point"]) for r in sv})
want = [int(i) for i in s["id"] if s["depth"][i] == 2 and s["lr"][i] == 0.05]
if pts != want: fail("sv/W2 lr=0.05 points %s vs %s" % (pts, want))
if any(r["train.tol"] != "0.001" for r in sv): fail("--params train.tol")
print("sv/W2 csv ok:", len(sv), "rows of", len(pts), "points")
EOF
cat "$T/py.txt"
# h5dump agrees too (17 significant digits): loss of point 5, its slice of
# /series/value (start and count from /series/index)
sc=$($PY -c "
import h5py, sys
f = h5py.File('$S', 'r'); x = f['series/index'][...]
names = list(f['series/names'].asstr()[...])
r = [r for r in x if r['point'] == 5 and r['kind'] >= 0 and names[r['kind']] == 'loss'][0]
print(int(r['value_start']), int(r['n']) * int(r['ncols']))")
h5dump -m %.17g -d /series/value -s "${sc% *}" -c "${sc#* }" "$S" > "$T/h5d.txt"
awk -F'\t' '$1 == 5 {print $3}' "$T/loss.tsv" > "$T/exp.txt"
check "export loss of point 5 = h5dump -m %.17g ($(wc -l < "$T/exp.txt") values)" $PY -c "
import re, sys
txt = open('$T/h5d.txt').read().split('ATTRIBUTE')[0]  # the data, not the unit attribute
a = [float(x) for l in txt.splitlines() if re.match(r'\s*\(\d+\):', l)
     for x in l.split(':', 1)[1].replace(',', ' ').split()]
b = [float(x) for x in open('$T/exp.txt')]
sys.exit(0 if a == b and b else 1)"

# ---- phase: cells = aggregates computed by hand from h5py ---------------------------
phase_check() { # args: metric agg extra-where [--shares] ; compares every cell (store $S)
  local metric=$1 agg=$2 where=$3 shares=${4:-}
  local args=(phase "$S" --x lr --y width --metric "$metric" --agg "$agg" --digits 17 $shares)
  [ -n "$where" ] && args+=(--where "$where")
  "${A[@]}" "${args[@]}" > "$T/ph.txt"
  $PY - "$S" "$T/ph.txt" "$metric" "$agg" "$where" "$shares" "$T" <<'EOF'
import sys, h5py, numpy as np
S, out, metric, agg, where, shares, T = sys.argv[1:]
sys.path.insert(0, T)
from ref import categories
cats = categories(S) if metric == "outcome" else None
f = h5py.File(S, "r"); s = f["summary"][...]
names = list(f["grid/axis_names"].asstr()[...]); ax = f["grid/axis_values"][...]
mt = ax[:, names.index("model.type")]
keep = np.ones(len(s), bool)
if where == "model.type=linear": keep = mt == 0
lines = [l.split() for l in open(out) if not l.startswith("#")]
xs = lines[0][3:]  # "width \ lr" then the lr values
cells = 0
for l in lines[1:]:
    w = float(l[0])
    for lr, got in zip(xs, l[1:]):
        m = keep & (s["width"] == w) & (s["lr"] == float(lr))
        if metric == "outcome":
            # docs/store.md "Outcome": c C P u D F .
            L = {"converged": "c", "catapult": "C", "plateaus": "P", "unconverged": "u",
                 "diverged": "D", "failed": "F", "pending": "."}
            letters = [L[cats[i]] for i in np.nonzero(m)[0]]
            if agg == "count":
                want = str(len(letters))
            else:
                best = max("cCPuDF.", key=lambda L: (letters.count(L), "c.uPCDF".index(L)))
                k = letters.count(best)
                want = best if k == len(letters) else ("%s%d/%d" % (best, k, len(letters)) if shares else best + "*")
            ok = got == want
        else:
            if metric == "steps_to_tol":
                r = (s["status"] == 1) & (s["final_loss"] < 1e-3)
                v = [float(x) for x in s["steps"][m & r]]
            else:
                v = [float(x) for x in s[metric][m] if not np.isnan(x)]
            if agg == "count":
                want, ok = len(v), int(got) == len(v)
            elif not v:
                want, ok = "-", got == "-"
            else:
                tot = 0.0
                for x in v: tot += x   # C sums in row order
                want = {"mean": tot / len(v), "min": min(v), "max": max(v)}[agg]
                ok = float(got) == want
        if not ok:
            print("cell lr=%s width=%s: got %s, want %s" % (lr, w, got, want)); sys.exit(1)
        cells += 1
print("%s/%s: %d cells ok" % (metric, agg, cells))
sys.exit(0 if cells == 6 else 1)
EOF
}
check "phase outcome (mixed cells: most common then *, ties to the worse)" phase_check outcome mean ""
grep -qE ' [cCPuDF.]\*' "$T/ph.txt" && ok "phase has mixed outcome cells" || bad "phase: expected mixed cells ($(cat "$T/ph.txt"))"
check "... legend lines name every letter" bash -c "grep -q '^# c converged, u unconverged, P plateaus, C catapult, D diverged, F failed,\$' '$T/ph.txt' && grep -q '^# \. pending, - empty\$' '$T/ph.txt'"
cat "$T/ph.txt"
check "phase outcome --shares (D5/8 style)" phase_check outcome mean "" --shares
grep -qE '[cCPuDF.][0-9]+/[0-9]+' "$T/ph.txt" && ok "phase --shares has shares" || bad "phase --shares ($(cat "$T/ph.txt"))"
check "phase outcome count" phase_check outcome count ""
check "phase final_loss mean" phase_check final_loss mean ""
check "phase final_loss min, linear only" phase_check final_loss min "model.type=linear"
check "phase min_loss max" phase_check min_loss max ""
check "phase steps_to_tol mean" phase_check steps_to_tol mean ""
check "phase steps_to_tol count" phase_check steps_to_tol count ""
# ---- outcome categories: a copy of the store with every category in its summary --------
# (catapult: stored outcome 2; plateaus: converged and plateaus >= 1; a catapult with
# plateaus stays catapult; failed; pending and running -> pending; rows 6 and 7 are
# unconverged as run). Rows 0..7 are the cell lr=0.05, width=4.
cp "$S" "$T/m.h5"
$PY - "$T/m.h5" <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r+"); s = f["summary"][...]
s["outcome"][0] = 2; s["plateaus"][1] = 1; s["plateaus"][2] = 3; s["outcome"][2] = 2
s["status"][3] = 3; s["status"][4] = 0; s["status"][5] = 4
f["summary"][...] = s; f.close()
EOF
"${A[@]}" ls "$T/m.h5" --limit 8 > "$T/lsm"
check "ls shows the outcome column" bash -c "head -1 '$T/lsm' | grep -qE 'status +outcome'"
check "ls outcome names of rows 0..5" test "$(awk '$1 ~ /^[0-5]$/ {print $8}' "$T/lsm" | tr '\n' ' ')" = "catapult plateaus catapult failed pending pending "
want=$(ref "$T/m.h5")
check "ls outcome counts line = h5py ($want)" grep -qx "$want" "$T/lsm"
check "... 2 catapult, 1 plateaus, 1 failed, 2 pending, >= 2 unconverged" \
  bash -c "echo '$want' | grep -qE '^outcomes: [0-9]+ converged, 2 catapult, [0-9]+ diverged, 1 plateaus, 1 failed, 2 pending, ([2-9]|[1-9][0-9]+) unconverged$'"
check "ls outcome names of rows 6 7: unconverged" test "$(awk '$1 ~ /^[67]$/ {print $8}' "$T/lsm" | tr '\n' ' ')" = "unconverged unconverged "
"${A[@]}" ls "$T/m.h5" --where outcome=catapult > "$T/lsm2"
check "ls --where outcome=catapult = points 0 2" test "$(ids "$T/lsm2")" = "0 2"
"${A[@]}" ls "$T/m.h5" --where 'outcome!=converged,outcome!=diverged' > "$T/lsm3"
want=$(ref "$T/m.h5" 'x not in ("converged", "diverged")')
check "ls --where outcome!=converged,outcome!=diverged = h5py ($want)" test "$(ids "$T/lsm3")" = "$want"
check "... points 0..7 among them" bash -c "echo '$want' | grep -q '^0 1 2 3 4 5 6 7 '"
"${A[@]}" ls "$T/m.h5" --where outcome=unconverged > "$T/lsm4"
want=$(ref "$T/m.h5" 'x == "unconverged"')
check "ls --where outcome=unconverged = h5py ($want)" test "$(ids "$T/lsm4")" = "$want"
check "ls --where outcome=bogus: exit 2" test "$(code "${A[@]}" ls "$T/m.h5" --where outcome=bogus)" -eq 2
check "... lists the outcomes" grep -q "converged, unconverged, catapult, diverged, plateaus, failed, pending" "$T/err"
"${A[@]}" export "$T/m.h5" --where 'outcome=plateaus' > "$T/m.csv"
check "export --where outcome=plateaus: point 1, outcome column plateaus" \
  test "$(cut -d, -f1,10 "$T/m.csv" | tr '\n' ' ')" = "id,outcome 1,plateaus "
S0=$S; S=$T/m.h5
check "phase outcome letters C P F . on the edited store" phase_check outcome mean ""
check "... the lr=0.05 width=4 cell is C* (2 C, 2 ., 2 u: tie to the worse)" grep -qE '^4 +C\* ' "$T/ph.txt"
check "phase outcome --shares on the edited store" phase_check outcome mean "" --shares
check "... C2/8" grep -qE '^4 +C2/8 ' "$T/ph.txt"
S=$S0
for c in ls export phase; do
  "${A[@]}" $c --help > "$T/help"
  check "$c --help documents the outcome rules" bash -c "grep -q 'catapult_factor' '$T/help' && grep -q 'plateaus  converged, and' '$T/help' && grep -q 'unconverged done (all its steps), no catapult, not converged' '$T/help' && grep -q 'train.tol or settled' '$T/help' && grep -q peak_ratio '$T/help'"
done

# ---- numbers, nearest grid values, "did you mean", short usage (issue 12) ---------------
# log-spaced lr: the canonical text has 15 digits (0.00177827941003892); plan, ls and
# phase print the fewest digits (>= 3) that keep the grid values apart
cat > "$T/g.yaml" <<'EOF'
name: short
seed: 1
grid:
  lr: {start: 0.001, stop: 0.01, num: 5, spacing: log}
  width: [4, 4096]
model: {depth: 2}
data: {kind: teacher, n_train: 16, n_test: 0, d_in: 3, d_out: 1}
loss: {reduction: half_mean}
train: {steps: 5}
EOF
"$DYNSWEEP" plan "$T/g.yaml" > "$T/plan"
check "plan prints lr 0.00178, width 4096 (not 0.00177827941003892 / 4.1e+03)" \
  bash -c "grep -qE '^ +2 +0 +0.00178 +4 ' '$T/plan' && grep -qE ' 0.01 +4096 ' '$T/plan' && ! grep -q 0.0017782 '$T/plan'"
drun 2 "$T/g.yaml" -o "$T/g.h5" -q
G=$T/g.h5
"${A[@]}" ls "$G" > "$T/lsg"
check "ls prints the short lr values" test "$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $3}' "$T/lsg" | sort -u -g | tr '\n' ' ')" = "0.001 0.00178 0.00316 0.00562 0.01 "
"${A[@]}" phase "$G" --x lr --y width > "$T/phg"
check "phase header: the short lr values" grep -qE '^width \\ lr 0.001 0.00178 0.00316 0.00562 0.01$' "$T/phg"
check "phase rows: 4096 and 4" bash -c "grep -qE '^4096 ' '$T/phg' && grep -qE '^4 ' '$T/phg'"
check "phase lines are short (<= 60 characters)" test "$(grep -v '^#' "$T/phg" | awk '{ if (length > m) m = length } END { print m }')" -le 60
"${A[@]}" export "$G" -o "$T/g.csv"
check "export keeps the exact values (17 digits)" grep -q ',0.0017782794100389' "$T/g.csv"
# --where by the printed (rounded) value: the nearest grid value within 1%
"${A[@]}" ls "$G" --where 'lr=0.00178' > "$T/lsn"
check "ls --where lr=0.00178 matches the grid value 0.00177827941003892 (2 points)" test "$(ids "$T/lsn")" = "2 3"
"${A[@]}" ls "$G" --where 'lr!=0.00178' > "$T/lsn2"
check "ls --where lr!=0.00178: the other 8" test "$(ids "$T/lsn2" | wc -w)" -eq 8
check "ls --where lr=0.005 (no grid value within 1%): exit 2" test "$(code "${A[@]}" ls "$G" --where 'lr=0.005')" -eq 2
check "... says which values exist" grep -q "its values: 0.001, 0.00178, 0.00316, 0.00562, 0.01" "$T/err"
check "ls --where with no matching combination: exit 0, empty" test "$(code "${A[@]}" ls "$S" --where 'lr=1.2,status=failed')" -eq 0
check "... says which values exist" grep -q "no point matches --where 'lr=1.2,status=failed'; the values of lr: 0.05, 0.3, 1.2" "$T/err"
check "phase with no matching point: exit 2 with the values" bash -c "test \$(cd '$T' && { '${A[*]}' phase '$S' --x lr --y width --where 'status=failed,depth=2' 2>'$T/err' >/dev/null; echo \$?; }) -eq 2 && grep -q 'the values of depth: 1, 2' '$T/err'"
# did you mean
check "ls --sort final_los: exit 2" test "$(code "${A[@]}" ls "$S" --sort final_los)" -eq 2
check "... did you mean 'final_loss'" grep -q "unknown column 'final_los' (did you mean 'final_loss'?)" "$T/err"
check "phase --x lrr: did you mean 'lr'" bash -c "'${A[*]}' phase '$S' --x lrr --y width 2>&1 | grep -q \"did you mean 'lr'\""
check "ls --where model.tpye=relu: did you mean 'model.type'" bash -c "'${A[*]}' ls '$S' --where model.tpye=relu 2>&1 | grep -q \"did you mean 'model.type'\""
check "export --params train.stpes: did you mean 'train.steps'" bash -c "'${A[*]}' export '$S' --params train.stpes 2>&1 | grep -q \"did you mean 'train.steps'\""
# a bad option: one line, the usage lines, a pointer to --help (not the whole help)
for c in ls export phase; do
  check "$c --bogus: exit 2" test "$(code "${A[@]}" $c "$S" --bogus)" -eq 2
  check "... one message line, the usage, where the help is ($(wc -l < "$T/err") lines)" \
    bash -c "head -1 '$T/err' | grep -q \"^dynsweep: $c: unknown option '--bogus'\" && sed -n 2p '$T/err' | grep -q '^usage: dynsweep $c' && tail -1 '$T/err' | grep -q '^(dynsweep $c --help for every option)' && test \$(wc -l < '$T/err') -le 5"
done
check "plan --bogus: the same" bash -c "'$DYNSWEEP' plan --bogus 2>&1 | tail -1 | grep -q '^(dynsweep plan --help for every option)'"

"${A[@]}" phase "$S" --x model.type --y depth --where 'lr=0.05' > "$T/ph2.txt"
check "phase over an enum axis: columns linear relu" grep -qE '^depth \\ model.type +linear +relu$' "$T/ph2.txt"
check "... aggregated over replicas and width" grep -q "aggregated over replicas (2), width" "$T/ph2.txt"
report
