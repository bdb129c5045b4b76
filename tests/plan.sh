#!/usr/bin/env bash
# plan.sh -- `dynsweep plan`'s calibrated time estimate (issue 12):
#  A. the BLAS probe is run on first use and cached in $XDG_CACHE_HOME/dynsweep
#     (else ~/.cache/dynsweep); a second plan reads it (its "probed" time stays);
#     a changed key (CPU, kernel, OpenBLAS core, version) or a broken file
#     probes again; --recalibrate probes again; another OpenBLAS core has a
#     file of its own; an unwritable cache still plans (said, exit 0)
#  B. the estimate against a real run in the same test: sum of the points'
#     wall_s against the sum of their estimates, within 3x either way once
#     the share of a core the run had (its CPU / wall seconds) is counted
#  C. the output: wall per rank count, non-increasing, lines <= 80 columns
#  D. submit --dry-run suggests a --time and counts the chained jobs
source "$DS_SRC/tests/lib.sh"
export HOME=$T/home XDG_CACHE_HOME=$T/cache
mkdir -p "$HOME"
cat >"$T/s.yaml" <<'EOF'
name: plan-test
seed: 1
model: {type: relu, depth: 2, width: 16, bias: true}
data: {kind: teacher, d_in: 16, d_out: 4, rank: 2, n_train: 256, n_test: 64, noise: 0.01}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.01}
train: {steps: 1500}
record: {series: [loss, test_loss, layer_sv], every: 25, top_k: 2}
grid:
  width: [16, 64]
  depth: [2, 3]
  model.type: [linear, relu]
EOF
probe() { ls "$XDG_CACHE_HOME"/dynsweep/probe-*.txt 2>/dev/null | head -1; }
field() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

# ---- A. the cache
code "$DYNSWEEP" plan "$T/s.yaml" >/dev/null
cp "$T/out" "$T/plan1"
check "A: first plan exits 0" test "$(code "$DYNSWEEP" plan "$T/s.yaml")" = 0
f=$(probe)
check "A: the probe is cached under XDG_CACHE_HOME/dynsweep ($f)" test -s "$f"
check "A: the first plan ran the probe ('run now')" grep -q "by a probe (.*, run now, load" "$T/plan1"
check "A: the cache has 36 gemm figures, svd/syev, its key" \
  bash -c "[ \$(grep -c '^gemm ' '$f') = 36 ] && [ \$(grep -c '^svd ' '$f') = 4 ] && grep -q '^key format=1 ' '$f'"
secs=$(field seconds "$f")
echo "probe took $secs s (load $(field load "$f"))"
# < 2 s on a core of its own; a busy host (load above its CPUs) stretches it
cpus=$(nproc); load=$(field load "$f")
check "A: the probe takes < 2 s x max(1, load $load / $cpus CPUs) ($secs s)" \
  awk -v s="$secs" -v l="$load" -v c="$cpus" 'BEGIN { f = l / c; if (f < 1) f = 1; exit !(s > 0 && s < 2 * f) }'
t1=$(field probed "$f")
sleep 1.1
"$DYNSWEEP" plan "$T/s.yaml" >"$T/plan2"
check "A: second plan reads the cache ('cached')" grep -q "by a probe (.*, cached, load" "$T/plan2"
check "A: second plan did not probe again (probed $t1 kept)" test "$(field probed "$f")" = "$t1"
check "A: the same estimate from the cache" \
  test "$(grep -A1 '^  ranks' "$T/plan1" | tail -1)" = "$(grep -A1 '^  ranks' "$T/plan2" | tail -1)"
# a key that differs (another CPU, kernel, OpenBLAS, version): probed again
sed -i 's/^key format=1 version=[^ ]*/key format=1 version=0.0.0-other/' "$f"
"$DYNSWEEP" plan "$T/s.yaml" >"$T/plan3"
t3=$(field probed "$f")
check "A: a changed key probes again (probed $t1 -> $t3)" test "$t3" -gt "$t1"
check "A: ... and writes this host's key back" bash -c "! grep -q 0.0.0-other '$f'"
check "A: ... and says so ('run now')" grep -q "run now" "$T/plan3"
# a broken cache file (truncated): probed again, not an error
head -c 200 "$f" >"$T/trunc" && cat "$T/trunc" >"$f"
check "A: a truncated cache: plan exits 0" test "$(code "$DYNSWEEP" plan "$T/s.yaml")" = 0
check "A: ... and probes again (36 gemm lines)" test "$(grep -c '^gemm ' "$f")" = 36
# --recalibrate
t4=$(field probed "$f"); sleep 1.1
"$DYNSWEEP" plan "$T/s.yaml" --recalibrate >"$T/plan4"
check "A: --recalibrate probes again" bash -c "[ $(field probed "$f") -gt $t4 ] && grep -q 'run now' '$T/plan4'"
# another OpenBLAS core: a file of its own
OPENBLAS_CORETYPE=Prescott "$DYNSWEEP" plan "$T/s.yaml" >/dev/null 2>&1
check "A: OPENBLAS_CORETYPE=Prescott has its own cache file" \
  test "$(ls "$XDG_CACHE_HOME"/dynsweep/probe-*Prescott*.txt 2>/dev/null | wc -l)" = 1
# no XDG_CACHE_HOME: ~/.cache
XDG_CACHE_HOME= "$DYNSWEEP" plan "$T/s.yaml" >/dev/null
check "A: without XDG_CACHE_HOME: ~/.cache/dynsweep" bash -c "ls '$HOME'/.cache/dynsweep/probe-*.txt >/dev/null"
# a cache that cannot be written (its parent is a file; root ignores modes):
# the plan still estimates, says why nothing was cached, exits 0
echo x >"$T/file"
rc=$(XDG_CACHE_HOME=$T/file/cache code "$DYNSWEEP" plan "$T/s.yaml")
check "A: unwritable XDG_CACHE_HOME: plan exits 0 (rc $rc)" test "$rc" = 0
check "A: ... says it is not cached" grep -q "not cached: $T/file/cache/dynsweep" "$T/out"
check "A: ... still prints the wall times" grep -q "^  wall " "$T/out"
rc=$(HOME=$T/file XDG_CACHE_HOME= code "$DYNSWEEP" plan "$T/s.yaml")
check "A: read-only home (HOME a file, no XDG_CACHE_HOME): plan exits 0 (rc $rc)" \
  bash -c "[ $rc = 0 ] && grep -q 'not cached' '$T/out'"
# an address space too small for OpenBLAS's buffer (which would retry mmap
# without end): no probe, nominal rates, said (not under ASan: its shadow
# memory needs terabytes of address space)
case "$(ldd "$(dirname "$DYNSWEEP")/libexec/dynsweep" 2>/dev/null || true)" in
  *libasan*) echo "skip: ulimit -v case under ASan" ;;
  *) rc=0; (ulimit -v 150000; XDG_CACHE_HOME=$T/vcache timeout 60 "$DYNSWEEP" plan "$T/s.yaml") >"$T/vout" 2>&1 || rc=$?
     check "A: under ulimit -v 150000 (KB): plan exits 0 (rc $rc), NOT calibrated, said why" \
       bash -c "[ $rc = 0 ] && grep -q 'NOT calibrated: nominal rates' '$T/vout' && grep -q 'no probe: address space' '$T/vout'"
     check "A: ... and caches nothing" test ! -e "$T/vcache/dynsweep" ;;
esac

# ---- B. estimate vs a real run of the same sweep, same machine, now. The
# estimate is for a core of its own; on a busy host the run gets a share of
# one, measured in the same run: its CPU seconds / its wall seconds (one rank,
# rank 0 runs the points, so the process's own times say it)
"$DYNSWEEP" plan "$T/s.yaml" --all >"$T/plan"
echo "load: $(cat /proc/loadavg)"
# CPU seconds of this shell's finished children (bash's `times`, second line;
# called in this shell, not in a $(...) subshell, which has children of its own)
child_cpu() { tail -1 "$1" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/);
  printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'; }
times >"$T/times0"; t0=$(date +%s.%N)
"$DYNSWEEP" run "$T/s.yaml" -o "$T/s.h5" -q
t1=$(date +%s.%N); times >"$T/times1"
c0=$(child_cpu "$T/times0"); c1=$(child_cpu "$T/times1")
cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
"$DYNSWEEP" ls "$T/s.h5" >"$T/ls"
est=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 7 { s += $NF; n++ } END { printf "%.4f %d", s, n }' "$T/plan")
col=$(awk '$1 == "point" { for (i = 1; i <= NF; i++) if ($i == "wall_s") print i; exit }' "$T/ls")
real=$(awk -v c="$col" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { s += $c; n++ } END { printf "%.4f %d", s, n }' "$T/ls")
share=$(awk -v c="$cpu" -v a="$t0" -v b="$t1" 'BEGIN { q = c / (b - a); if (q > 1) q = 1; printf "%.3f", q }')
ratio=$(awk -v e="${est% *}" -v r="${real% *}" 'BEGIN { printf "%.3f", r / e }')
core=$(awk -v e="${est% *}" -v r="${real% *}" -v q="$share" 'BEGIN { printf "%.3f", r * q / e }')
echo "B: estimated ${est% *} s over ${est#* } points; measured wall_s ${real% *} s over ${real#* }" \
     "(measured/estimated $ratio); the run had $share of a core ($cpu CPU-s in" \
     "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s): on a core of its own $core"
check "B: plan and ls list the same 8 points" test "${est#* } ${real#* }" = "8 8"
# the estimate is for a release build: an ASan build runs the C loops 2-3x slower
lim=3
case "$(ldd "$(dirname "$DYNSWEEP")/libexec/dynsweep" 2>/dev/null || true)" in *libasan*) lim=6 ;; esac
check "B: measured/estimated on a core of its own within ${lim}x ($core)" \
  awk -v q="$core" -v l="$lim" 'BEGIN { exit !(q > 1 / 3 && q < l) }'
check "B: measured/estimated within ${lim}x / the core share ($ratio, share $share)" \
  awk -v q="$ratio" -v c="$share" -v l="$lim" 'BEGIN { exit !(q > 1 / 3 && q < l / c) }'
# the 1-rank wall is the sum plus the start
w1=$(awk '/^  wall / { print $2; exit }' "$T/plan")
check "B: 1-rank wall ($w1 s) = the points' sum (${est% *} s) + start" \
  awk -v w="$w1" -v s="${est% *}" 'BEGIN { exit !(w >= s && w <= s + 1.5) }'

# ---- C. the output
check "C: ranks 1 2 4 8 9 (8 points: 8 workers need 9 ranks)" grep -qE '^  ranks +1 +2 +4 +8 +9$' "$T/plan"
check "C: wall never grows with more ranks" awk '/^  wall / {
  n = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { v = $i; u = $(i + 1); if (u == "min") v *= 60;
    if (u == "h") v *= 3600; if (n && v > p * 1.0001) bad = 1; p = v; n++ }
  exit bad }' "$T/plan"
# the probe cache's path is printed whole on a line of its own (to be copied;
# its length is the host's: the host and CPU names are in the file name)
check "C: every line fits 80 columns (header, point table, time lines; not the cache path)" \
  bash -c "awk '!/^  cache / && length > 80 { print; bad = 1 } END { exit bad }' '$T/plan'"
cpath=$(sed -n 's/^  cache //p' "$T/plan" | head -n 1)
check "C: the cache path line names the cache file ($cpath)" \
  bash -c "case '$cpath' in '$XDG_CACHE_HOME'/dynsweep/probe-*.txt) test -s '$cpath' ;; *) false ;; esac"
check "C: the basis is said (DGEMM 16x16 ... GFLOP/s)" grep -qE '^  DGEMM 16x16 on 64 samples [0-9.]+ GFLOP/s' "$T/plan"

# ---- D. submit --dry-run
sed 's/steps: 1500/steps: 3000000/' "$T/s.yaml" >"$T/long.yaml"
rc=$(code "$DYNSWEEP" submit "$T/long.yaml" -o "$T/l.h5" --dry-run --ntasks 3 --time 5 --signal-time 30)
cat "$T/out"
check "D: dry-run exits 0 (rc $rc)" test "$rc" = 0
check "D: dry-run suggests a --time H:MM:00" grep -qE '^suggested: --time [0-9]+:[0-9][0-9]:00 ' "$T/out"
check "D: dry-run says the ranks it assumed (--ntasks 3)" grep -q "on 3 rank(s) (--ntasks 3)" "$T/out"
# the suggestion is the shortest limit (whole minutes) that holds the estimate
# x 1.5 after 30 s to start and the 30 s drain; the jobs at --time 5 work
# 300 - 30 - 30 = 240 s each: about (suggested - 60 s) / 240 s of them
sugg=$(sed -nE 's/^suggested: --time ([0-9]+):([0-9][0-9]):00 .*/\1 \2/p' "$T/out")
jobs=$(sed -nE 's/^with --time 5: ([0-9]+) job\(s\) expected/\1/p' "$T/out")
echo "D: suggested ${sugg:-?} (h min), $jobs jobs at --time 5"
est3=$(sed -nE 's/^estimate: ([0-9.]+) (s|min|h) on 3 rank.*/\1 \2/p' "$T/out")
check "D: the jobs at --time 5 follow the suggestion (jobs ~ (suggested - 60 s) / 240 s)" \
  awk -v s="$sugg" -v j="$jobs" 'BEGIN { split(s, a, " "); m = a[1] * 60 + a[2];
    need = (m * 60 - 60) / 240; exit !(j >= 2 && j >= need && j <= need + 1) }'
check "D: estimate on 3 ranks printed ($est3)" test -n "$est3"
rc=$(code "$DYNSWEEP" submit "$T/s.yaml" -o "$T/s2.h5" --dry-run --ntasks 2)
check "D: a short sweep at the default --time: 1 job" \
  grep -qE '^with --time 1:00:00 \(the default\): 1 job\(s\) expected' "$T/out"
check "D: the script is still written" test -s "$T/s2.h5.sbatch"
report
