#!/usr/bin/env bash
# The demo sweep under mpirun -n 1, 2 and 3 gives bitwise identical
# trajectories (tests/store_diff.py: every point's series bit for bit; the
# /series tables are in finish order, so not the files) and identical summary
# rows apart from wall time and rank.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/sweeps/demo.yaml
for n in 1 2 3; do
  drun $n "$sweep" -o "$T/n$n.h5" --quiet
  check "run -n $n exits 0" test -s "$T/n$n.h5"
  "$DYNSWEEP" ls "$T/n$n.h5" | awk '{ $(NF-1)=""; $NF=""; print }' > "$T/ls$n.txt"
done
npts=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$T/ls1.txt" | wc -l)
check "24 points listed (got $npts)" test "$npts" -eq 24
check "every point finished" bash -c "! grep -qE ' (pending|failed) ' '$T/ls1.txt'"
for n in 2 3; do
  check "every point's series n1 vs n$n (bitwise)" same_points "$T/n1.h5" "$T/n$n.h5"
  check "summary n1 vs n$n (timings excluded)" cmp -s "$T/ls1.txt" "$T/ls$n.txt"
done
# the runs used more than one worker: ranks 1 and 2 both appear with -n 3
ranks=$("$DYNSWEEP" ls "$T/n3.h5" | awk '$NF ~ /^[0-9]+$/ {print $NF}' | sort -u | tr '\n' ' ')
check "-n 3 used ranks 1 and 2 (saw: $ranks)" test "$ranks" = "1 2 "
# the comparison must see a difference when there is one (it can fail)
check "store_diff detects a different sweep" bash -c "sed 's/^seed: 1 /seed: 2 /' '$sweep' > '$T/s8.yaml' && \
  mpirun --oversubscribe -n 1 '$DYNSWEEP' run '$T/s8.yaml' -o '$T/s8.h5' -q && \
  ! '$PY' '$DS_SRC/tests/store_diff.py' '$T/n1.h5' '$T/s8.h5'"
report
