#!/usr/bin/env bash
# bad_sweeps.sh -- runs `$DYNSWEEP plan FILE` on every tests/bad_sweeps/*.yaml
# and checks exit code 2 and that stderr contains "FILE:<expectation>", where
# the expectation is the file's first line "# expect: LINE:COL: message".
# Also checks that a missing file is refused the same way and that the good
# sweeps (sweeps/demo.yaml, sweeps/examples/*.yaml) plan with exit code 0.
# (tests/bad_sweeps/*.svm are data files some of the bad sweeps name.)
set -u
if [ -z "${DYNSWEEP:-}" ]; then
  echo "bad_sweeps.sh: DYNSWEEP is not set (path of the dynsweep binary; ctest sets it)" >&2
  exit 1
fi
if [ ! -x "$DYNSWEEP" ]; then
  echo "bad_sweeps.sh: DYNSWEEP=$DYNSWEEP is not an executable" >&2
  exit 1
fi
src=${DS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$src/tests/bad_sweeps
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check_fails FILE EXPECTED-SUBSTRING
check_fails() {
  local f=$1 want=$2 rc
  "$DYNSWEEP" plan "$f" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  local err
  err=$(cat "$tmp/err")
  if [ "$rc" -ne 2 ]; then
    echo "FAIL $f: exit code $rc, want 2; stderr: $err" >&2
    fail=$((fail + 1))
  elif [[ "$err" != *"$want"* ]]; then
    echo "FAIL $f: stderr lacks: $want" >&2
    echo "     got: $err" >&2
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

n=0
for f in "$dir"/*.yaml; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  first=$(head -n 1 "$f")
  case "$first" in
    "# expect: "*) check_fails "$f" "$f:${first#"# expect: "}" ;;
    *) echo "FAIL $f: first line must be '# expect: LINE:COL: message'" >&2; fail=$((fail + 1)) ;;
  esac
done
if [ "$n" -lt 10 ]; then
  echo "FAIL: only $n files in $dir" >&2
  fail=$((fail + 1))
fi

check_fails "$tmp/no-such-sweep.yaml" "$tmp/no-such-sweep.yaml: cannot open: No such file or directory"

for good in "$src/sweeps/demo.yaml" "$src"/sweeps/examples/*.yaml; do
  if "$DYNSWEEP" plan "$good" >"$tmp/out" 2>"$tmp/err"; then
    pass=$((pass + 1))
  else
    echo "FAIL $good: good sweep exits $?; stderr: $(cat "$tmp/err")" >&2
    fail=$((fail + 1))
  fi
done

echo "bad_sweeps: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
