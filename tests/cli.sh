#!/usr/bin/env bash
# The command line: help on every subcommand, documented exit codes, plan,
# refusing a file that is not a store, status, and the OpenBLAS kernel check.
. "$(dirname "$0")/lib.sh"
code() { set +e; "$@" >"$T/out" 2>"$T/err"; echo $?; set -e; }
for c in run plan ls show status submit version; do
  check "$c --help exits 0 and prints usage" test "$(code "$DYNSWEEP" $c --help)" -eq 0
  grep -q "usage: .*dynsweep $c" "$T/out" || bad "$c --help text"
done
check "no command: exit 2" test "$(code "$DYNSWEEP")" -eq 2
check "unknown command: exit 2" test "$(code "$DYNSWEEP" frobnicate)" -eq 2
check "run without -o: exit 2" test "$(code "$DYNSWEEP" run "$DS_SRC/sweeps/demo.yaml")" -eq 2
check "run without -o says what is missing" grep -q "missing -o" "$T/err"
check "plan demo: exit 0" test "$(code "$DYNSWEEP" plan "$DS_SRC/sweeps/demo.yaml")" -eq 0
check "plan prints the total" grep -qE "^total: [0-9]+ points" "$T/out"
n=$(sed -nE 's/^total: ([0-9]+) points.*/\1/p' "$T/out")
m=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$T/out")
check "plan lists every point ($m of $n)" test "$n" -eq "$m" -o "$m" -eq 41
check "plan of a missing file: exit 2" test "$(code "$DYNSWEEP" plan "$T/nope.yaml")" -eq 2
check "... naming the file" grep -q "nope.yaml" "$T/err"

# an existing file that is not a dynsweep store is refused before any work,
# and left untouched (an existing store is resumed: tests/resume.sh)
echo "precious" > "$T/exists.h5"
check "run onto an existing non-store file: exit 2" \
  test "$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" -o "$T/exists.h5")" -eq 2
check "... file untouched" test "$(cat "$T/exists.h5")" = "precious"
check "... message names the store and says it was left untouched" grep -q "exists.h5: not an HDF5 file.*left untouched" "$T/err"
check "... no journal left" test ! -e "$T/exists.h5.journal"
check "show on a non-HDF5 file: non-zero" test "$(code "$DYNSWEEP" show "$T/exists.h5" 0)" -ne 0
check "run into a missing directory: non-zero, nothing created" bash -c \
  "! mpirun --oversubscribe -n 1 '$DYNSWEEP' run '$DS_SRC/tests/sweeps/small.yaml' -o '$T/no/dir/x.h5' -q 2>/dev/null && test ! -e '$T/no'"

# show: a bad point id is bad input
mpirun --oversubscribe -n 1 "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
check "show of point 999: exit 2" test "$(code "$DYNSWEEP" show "$T/s.h5" 999)" -eq 2
check "show of point 'x': exit 2" test "$(code "$DYNSWEEP" show "$T/s.h5" x)" -eq 2
check "show of point 0: exit 0" test "$(code "$DYNSWEEP" show "$T/s.h5" 0)" -eq 0
check "show prints loss and per-layer singular values" bash -c "grep -q '^# loss ' '$T/out' && grep -q '^# sv/W2 ' '$T/out'"
check "status of a complete store: exit 0" test "$(code "$DYNSWEEP" status "$T/s.h5")" -eq 0
check "status shows state and counts" bash -c "grep -q '^state:   complete' '$T/out' && grep -qE '^points:  16 done, 0 running, 16 diverged, 0 failed, 0 pending of 32' '$T/out'"
check "status of a missing store: exit 2" test "$(code "$DYNSWEEP" status "$T/nope.h5")" -eq 2
check "status without a store: exit 2" test "$(code "$DYNSWEEP" status)" -eq 2
check "run --checkpoint-every x: exit 2" test "$(code "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" -o "$T/y.h5" --checkpoint-every x)" -eq 2
check "store records the BLAS kernel" bash -c "h5dump -a /blas_kernel '$T/s.h5' | grep -q '$("$DYNSWEEP" version | sed -nE 's/^OpenBLAS kernel: ([A-Za-z0-9]+).*/\1/p')'"

# OpenBLAS kernel: a slow kernel chosen by the library is replaced by re-exec
best=$("$DYNSWEEP" version | sed -nE 's/.*best for this CPU: ([A-Za-z0-9]+).*/\1/p')
if [ "$best" = "generic" ]; then
  echo "skip: this CPU has no faster OpenBLAS kernel than the generic one"
else
  out=$(DYNSWEEP_ASSUME_DETECTED=Prescott "$DYNSWEEP" version)
  check "re-exec: runs $best after the library chose Prescott" \
    bash -c "echo '$out' | grep -q 'OpenBLAS kernel: $best .*re-executed, library had chosen Prescott'"
  out=$(OPENBLAS_CORETYPE=Prescott "$DYNSWEEP" version 2>&1)
  check "a user's OPENBLAS_CORETYPE is respected with a warning" \
    bash -c "echo '$out' | grep -q 'OpenBLAS kernel: Prescott' && echo '$out' | grep -q 'warning: OpenBLAS kernel Prescott was requested'"
fi

# the re-exec (here: to pin OpenBLAS to 1 thread) keeps the process name
# (it used to exec /proc/self/exe, so ps/top/perf showed "exe")
comm=none
env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" \
  -o "$T/comm.h5" >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 500); do
  if grep -qz '^DYNSWEEP_EXECED=1' "/proc/$pid/environ" 2>/dev/null; then comm=$(cat "/proc/$pid/comm"); break; fi
  sleep 0.01
done
wait $pid || true
check "after the re-exec the process is still named $(basename "$DYNSWEEP") (got: $comm)" \
  test "$comm" = "$(basename "$DYNSWEEP")"
report
