#!/usr/bin/env bash
# A diverging learning rate ends as status diverged with its step, not a crash;
# the converging ones end done with a loss far below the initial one.
. "$(dirname "$0")/lib.sh"
drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" --quiet
"$DYNSWEEP" ls "$T/s.h5" > "$T/ls.txt"
cat "$T/ls.txt"
# columns: point rep width depth lr model.type status outcome steps final min wall rank
ndiv=$(awk '$5 == 3 && $7 == "diverged"' "$T/ls.txt" | wc -l)
check "all 16 points at lr=3 diverged (got $ndiv)" test "$ndiv" -eq 16
ndone=$(awk '$5 == 0.02 && $7 == "done" && $9 == 300' "$T/ls.txt" | wc -l)
check "all 16 points at lr=0.02 done after 300 steps (got $ndone)" test "$ndone" -eq 16
# the diverged step is recorded and the loss series ends at it
p=$(awk '$7 == "diverged" {print $1; exit}' "$T/ls.txt")
"$DYNSWEEP" show "$T/s.h5" "$p" --series loss > "$T/loss.txt"
step=$(awk '$7 == "diverged" && $8 == "diverged" {print $9; exit}' "$T/ls.txt")
last=$(tail -1 "$T/loss.txt" | awk '{print $1}')
check "loss series of point $p ends at the diverged step $step (last $last)" test "$last" = "$step"
check "show names the diverged step" grep -q "at step $step" "$T/loss.txt"
check "h5dump reads /summary with diverged_step" bash -c "h5dump -d /summary '$T/s.h5' | grep -q diverged_step"
# convergence: final loss of a linear lr=0.02 point is < 1/10 of its step-0 loss
p=$(awk '$5 == 0.02 && $6 == "linear" {print $1; exit}' "$T/ls.txt")
"$DYNSWEEP" show "$T/s.h5" "$p" --series loss > "$T/l2.txt"
first=$(grep -v '^#' "$T/l2.txt" | head -1 | awk '{print $2}'); final=$(tail -1 "$T/l2.txt" | awk '{print $2}')
check "loss of point $p fell from $first to $final (< 1/10)" \
  python3 -c "import sys; sys.exit(0 if float('$final') < float('$first') / 10 else 1)"
report
