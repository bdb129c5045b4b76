#!/usr/bin/env bash
# progress_bar.sh -- rank 0's progress under a terminal (a pty from script(1),
# 80 columns): a bar that updates in place and never reaches the last column
# (so it cannot wrap and leave stale lines), also under mpirun, where rank 0's
# stderr is a pipe (the bar goes to the terminal mpirun writes to); plain
# periodic lines when mpirun's stderr is a file; "run 1" while rank 0 of a
# one-rank run trains a long point.
. "$(dirname "$0")/lib.sh"
small=$DS_SRC/tests/sweeps/small.yaml
mpi="mpirun --oversubscribe"
# in_pty CMD: runs CMD on a pseudo-terminal of 80 x 24; its screen output in $T/pty
in_pty() { script -qfec "stty cols 80 rows 24; $1" "$T/pty" >/dev/null 2>&1 </dev/null || true; }
# bars FILE: the redrawn bar texts (the pieces after each carriage return)
bars() { tr '\r' '\n' <"$1" | sed 's/\x1b\[K//g' | grep -E '^\[[#.]+\] [0-9]+/[0-9]+ done' || true; }

in_pty "$mpi -n 3 '$DYNSWEEP' run '$small' -o '$T/a.h5'"
n=$(bars "$T/pty" | wc -l)
check "mpirun -n 3 on a terminal: a progress bar ($n redraws)" test "$n" -ge 1
wmax=$(bars "$T/pty" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
check "... no redraw reaches column 80 (widest $wmax)" test "$wmax" -le 79 -a "$wmax" -ge 60
check "... the last one says 32/32 with done, div, fail, run, pts/s and ETA" bash -c \
  "tr '\r' '\n' <'$T/pty' | grep -E '32/32 done [0-9]+ div [0-9]+ fail 0 run 0 \| [0-9.e+]+ pts/s ETA' >/dev/null"
check "... redrawn in place (carriage return + erase to end of line)" grep -q $'\r\\[' "$T/pty"
check "... log lines start on a line of their own" bash -c "! grep -qE 'ETA [^ ]*dynsweep:' '$T/pty'"

in_pty "$mpi -n 3 '$DYNSWEEP' run '$small' -o '$T/b.h5' 2>'$T/b.err'"
check "mpirun's stderr to a file: no bar on the terminal" test "$(bars "$T/pty" | wc -l)" -eq 0
check "... the file has plain lines, no carriage return" bash -c \
  "grep -q 'finished 32 points' '$T/b.err' && ! grep -q $'\r' '$T/b.err'"

# one rank training a long point (~2 s of this host, long_sweep): the bar says run 1
long_sweep
( script -qfec "stty cols 80 rows 24; '$DYNSWEEP' run '$T/long.yaml' -o '$T/c.h5'" \
    "$T/pty1" >/dev/null 2>&1 </dev/null & echo $! >"$T/spid"; wait ) &
for i in $(seq 1 1200); do grep -q 'run 1' "$T/pty1" 2>/dev/null && break; sleep 0.05; done
check "-n 1: the bar says run 1 while rank 0 trains" grep -q '0/4 done 0 div 0 fail 0 run 1' "$T/pty1"
pkill -USR1 -f "run $T/long.yaml -o $T/c.h5" || true
wait || true
report
