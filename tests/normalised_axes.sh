#!/usr/bin/env bash
# The normalised axes of issue 12: lambda0 (top NTK eigenvalue at step 0, else
# top Hessian eigenvalue), eta_crit0, lr_lambda0 = lr x lambda0 and
# lr_eta_crit = lr / eta_crit0, as columns of ls / export and as binned axes of
# phase. On seed 003's two-layer linear net (half_sum loss) the catapult band
# must appear between lr_lambda0 = 2 and 4 without arithmetic by hand.
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "skip: /usr/bin/python3 lacks h5py/numpy (apt-get install python3-h5py python3-numpy)"; exit 0; }
D=$DYNSWEEP

# seed 003's catapult sweep, two widths (the full one: sweeps/repro/003_catapult.yaml)
sed -e 's/width: \[16, 64, 256, 1024, 4096\]/width: [16, 256]/' \
  "$DS_SRC/sweeps/repro/003_catapult.yaml" > "$T/cat.yaml"
grep -q 'width: \[16, 256\]' "$T/cat.yaml" || { bad "003_catapult.yaml changed: cannot reduce it"; report; exit 1; }
drun 2 "$T/cat.yaml" -o "$T/cat.h5" -q

# 1. export's columns equal the stored series (read with h5py, not through dynsweep)
"$D" export "$T/cat.h5" -o "$T/cat.csv"
check "export: lambda0, eta_crit0, lr_lambda0, lr_eta_crit = ntk/top and ntk/critical_lr at step 0" \
  "$PY" - "$T/cat.h5" "$T/cat.csv" ntk <<'PYEOF'
import csv, sys, h5py, numpy as np
store, table, src = sys.argv[1:4]
with h5py.File(store, "r") as f:
    g = f["series"]
    names = [x.decode() if isinstance(x, bytes) else x for x in g["names"][...]]
    idx = g["index"][...]
    first = {}
    for r in idx:
        if r["point"] < 0 or r["kind"] < 0: continue
        first[(int(r["point"]), names[r["kind"]])] = (int(g["step"][r["step_start"]]), float(g["value"][r["value_start"]]))
rows = list(csv.DictReader(open(table)))
assert rows, "no rows"
bad = 0
for row in rows:
    pid, lr = int(row["id"]), float(row["lr"])
    if src == "ntk":
        s, lam = first[(pid, "ntk/top")]
        s2, eta = first[(pid, "ntk/critical_lr")]
        assert s == 0 and s2 == 0
    else:
        s, lam = first[(pid, "hessian/top")]
        assert s == 0
        eta = 2.0 / lam
    got = [float(row[k]) for k in ("lambda0", "eta_crit0", "lr_lambda0", "lr_eta_crit")]
    want = [lam, eta, lr * lam, lr / eta]
    if got != want:
        bad += 1
        print("point", pid, "got", got, "want", want)
    if src == "ntk" and abs(eta * lam / 2 - 1) > 1e-15:  # half_sum: eta_crit = 2 / lambda
        bad += 1
        print("point", pid, "eta_crit0 is not 2/lambda0:", eta, lam)
print(len(rows), "rows checked,", bad, "bad")
sys.exit(1 if bad else 0)
PYEOF

# 2. the catapult band lies between 2 and 4 in lr_lambda0 (theory: exactly, any width)
"$D" ls "$T/cat.h5" --where outcome=catapult --add lr_lambda0,lr_eta_crit > "$T/ls"
check "ls --add shows lr_lambda0 and lr_eta_crit" bash -c "head -1 '$T/ls' | grep -q 'lr_lambda0 lr_eta_crit'"
ncat=$(awk 'NR>1 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$T/ls" | wc -l)
check "at least 8 catapult points (found $ncat)" test "$ncat" -ge 8
check "every catapult point has 2 < lr_lambda0 < 4 and 1 < lr_eta_crit < 2" \
  awk 'NR>1 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { if (!($5 > 2 && $5 < 4 && $6 > 1 && $6 < 2)) { print "outside:", $0; bad=1 } } END { exit bad }' "$T/ls"
"$D" ls "$T/cat.h5" --where 'lr_lambda0>4.1' > "$T/ls4"
n4=$(awk '/^[0-9]+ points:/ { print $1 }' "$T/ls4")
d4=$(sed -n 's/^outcomes:.* \([0-9][0-9]*\) diverged.*/\1/p' "$T/ls4")
check "every point with lr_lambda0 > 4.1 diverged ($d4 of $n4)" bash -c "[ '${n4:-0}' -gt 0 ] && [ '$n4' = '$d4' ]"

# 3. phase over lr_lambda0 x width: c below 2, C in [2.5, 4), D from 4, in every row
"$D" phase "$T/cat.h5" --x lr_lambda0 --y width > "$T/ph"
cat "$T/ph"
check "phase: bins of width 0.5 by default" grep -q 'lr_lambda0: bins of width 0.5' "$T/ph"
check "phase: every header line fits 80 columns" awk '/^#/ && length($0) > 80 { bad=1 } END { exit bad }' "$T/ph"
check "phase: c below 1.5, C from 2.5 to 3.5, D from 4 (each width)" \
  awk '/^width/ { for (i=4;i<=NF;i++) e[i]=$i; next } /^#/ { next }
       { rows++; for (i=2;i<=NF;i++) { x=e[i+2]; c=$i; if (c=="-") continue;
           if (x+0 < 1.5 && c!="c") bad=1; if (x+0>=2.5 && x+0<4 && c!="C") bad=1; if (x+0>=4 && c!="D") bad=1 } }
       END { exit !(rows==2 && !bad) }' "$T/ph"
"$D" phase "$T/cat.h5" --x lr_eta_crit --y width --x-bin 0.5 > "$T/ph2"
check "phase --x lr_eta_crit --x-bin 0.5: C in [1, 2) only" \
  awk '/^width/ { for (i=4;i<=NF;i++) e[i]=$i; next } /^#/ { next }
       { for (i=2;i<=NF;i++) { x=e[i+2]; c=$i; if (c ~ /^C/ && (x+0 < 1 || x+0 >= 2)) bad=1; if (x+0>=1.5 && x+0<2 && c!="C") bad=1 } }
       END { exit bad }' "$T/ph2"

# 4. the Hessian fallback: no NTK, Hessian top-1 at step 0 -> eta_crit0 = 2 / lambda0
cat > "$T/hess.yaml" <<'YEOF'
name: hess-lambda0
seed: 5
model: {type: relu, depth: 2, bias: false}
data: {kind: teacher, n_train: 32, n_test: 0, d_in: 4, d_out: 1}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd}
train: {steps: 20}
record: {series: [loss], spectra: {hessian: {every: 10}, top_k: 1}}
grid: {width: [8], lr: [0.05, 0.1, 0.2]}
YEOF
drun 2 "$T/hess.yaml" -o "$T/hess.h5" -q
"$D" export "$T/hess.h5" -o "$T/hess.csv"
check "export (Hessian only): lambda0 = hessian/top at step 0, eta_crit0 = 2/lambda0" \
  "$PY" - "$T/hess.h5" "$T/hess.csv" hessian < <(sed -n '/^import csv/,/^sys.exit/p' "$0")

# 5. a store without spectra: export keeps its columns, ls shows empty cells,
#    phase refuses the axis with a clear message
drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
"$D" export "$T/s.h5" -o "$T/s.csv"; head -1 "$T/s.csv" > "$T/hdr"
check "no spectra: export has no normalised columns" bash -c "! grep -q lambda0 '$T/hdr' && grep -q 'steps_to_tol$' '$T/hdr'"
"$D" ls "$T/s.h5" --add lambda0 --limit 2 > "$T/ls0"
check "no spectra: ls --add lambda0 prints empty cells" \
  awk 'NR==1 { exit !($7 == "lambda0") } NR==2 { exit !($7 == "done" && NF == 13) }' "$T/ls0"
rc=$(code "$D" phase "$T/s.h5" --x lr_lambda0 --y width)
check "no spectra: phase --x lr_lambda0 exits 2" test "$rc" -eq 2
check "... and says why" grep -q "normalised axes need record.spectra.ntk or .hessian" "$T/err"
rc=$(code "$D" phase "$T/cat.h5" --x lr --y width --x-bin -1)
check "phase --x-bin -1: exit 2, one line and the usage" bash -c "[ $rc -eq 2 ] && grep -q 'width > 0, auto or none' '$T/err'"
rc=$(code "$D" ls "$T/cat.h5" --add lr_lambd0)
check "ls --add lr_lambd0: did you mean lr_lambda0" bash -c "[ $rc -eq 2 ] && grep -q \"did you mean 'lr_lambda0'\" '$T/err'"
report
