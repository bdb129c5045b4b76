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
# (env -u: the suite's environment is hermetic, but these lines are about it)
best=$("$DYNSWEEP" version | sed -nE 's/.*best for this CPU: ([A-Za-z0-9]+).*/\1/p')
if [ "$best" = "generic" ]; then
  echo "skip: this CPU has no faster OpenBLAS kernel than the generic one"
else
  out=$(env -u OPENBLAS_CORETYPE DYNSWEEP_ASSUME_DETECTED=Prescott "$DYNSWEEP" version)
  check "re-exec: runs $best after the library chose Prescott, and says so" bash -c \
    "echo '$out' | grep -q 'OpenBLAS kernel: $best ran' && echo '$out' | grep -q 'the library chose Prescott when it loaded; dynsweep re-executed itself with OPENBLAS_CORETYPE=$best'"
  out=$(OPENBLAS_CORETYPE=Prescott "$DYNSWEEP" version 2>&1)
  check "a user's OPENBLAS_CORETYPE is respected, and version says why the kernel differs" bash -c \
    "echo '$out' | grep -q 'OpenBLAS kernel: Prescott ran (best for this CPU: $best)' && echo '$out' | grep -q 'differs because OPENBLAS_CORETYPE=Prescott is set in the environment'"
  check "... version prints no warning" bash -c "! echo '$out' | grep -q warning"
  # under mpirun: the warning once, from rank 0 (it was once per rank, twice)
  set +e
  OPENBLAS_CORETYPE=Prescott mpirun --oversubscribe -n 3 "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" \
    -o "$T/warn.h5" -q >"$T/out" 2>"$T/err"
  rc=$?
  set -e
  check "run under OPENBLAS_CORETYPE=Prescott on 3 ranks: exit 0 (rc $rc)" test "$rc" -eq 0
  nw=$(grep -c 'warning: OpenBLAS runs kernel Prescott, not the faster' "$T/err" || true)
  check "... the kernel warning printed once ($nw times)" test "$nw" -eq 1
  check "... on a line of its own, saying why" grep -qx "dynsweep: warning: OpenBLAS runs kernel Prescott, not the faster $best this CPU supports: OPENBLAS_CORETYPE=Prescott is set in the environment (unset it and dynsweep picks $best)" "$T/err"
  # read-only commands never warn
  for c in "ls $T/warn.h5" "show $T/warn.h5 0" "status $T/warn.h5" "export $T/warn.h5" \
           "phase $T/warn.h5 --x lr --y width" "plan $DS_SRC/tests/sweeps/small.yaml" "--help" \
           "run --help" "ls --help"; do
    # shellcheck disable=SC2086
    set +e; OPENBLAS_CORETYPE=Prescott "$DYNSWEEP" $c >/dev/null 2>"$T/err"; rc=$?; set -e
    check "'dynsweep $c' under OPENBLAS_CORETYPE=Prescott: exit 0, nothing on stderr" \
      test "$rc" -eq 0 -a ! -s "$T/err"
  done
fi

# the re-exec (here: to pin OpenBLAS to 1 thread) keeps the process name
# (it used to exec /proc/self/exe, so ps/top/perf showed "exe")
comm=none
env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" \
  -o "$T/comm.h5" >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 500); do
  if grep -qz "^DYNSWEEP_EXECED=$pid\$" "/proc/$pid/environ" 2>/dev/null; then comm=$(cat "/proc/$pid/comm"); break; fi
  sleep 0.01
done
wait $pid || true
check "after the re-exec the process is still named $(basename "$DYNSWEEP") (got: $comm)" \
  test "$comm" = "$(basename "$DYNSWEEP")"
# the guard against an exec loop is the pid: a dynsweep started by a dynsweep
# (submit -> sbatch -> mpirun) with the parent's variables still re-execs
[ "$best" != generic ] && out=$(env -u OPENBLAS_CORETYPE DYNSWEEP_EXECED=1 DYNSWEEP_REEXECED=Prescott DYNSWEEP_ASSUME_DETECTED=Prescott "$DYNSWEEP" version) &&
check "inherited DYNSWEEP_EXECED/REEXECED of another process are not taken for our own" \
  bash -c "echo '$out' | grep -q 'OpenBLAS kernel: $best ran' && echo '$out' | grep -q 'library chose Prescott'"
report
