#!/usr/bin/env bash
# tests/fuzz/fuzz.sh -- fuzz the sweep-file parser with libFuzzer (clang 14,
# -fsanitize=fuzzer,address,undefined).
#
#   tests/fuzz/fuzz.sh [SECONDS] [WORKERS]   build, seed, fuzz (default 300 s, 1 worker)
#   tests/fuzz/fuzz.sh --seed                only (re)write the seed corpus
#   tests/fuzz/fuzz.sh --merge               minimise the work corpus into tests/fuzz/corpus
#
# Build: build-fuzz/ (clang; the parser and its rooms are compiled with
# -fsanitize=fuzzer-no-link,address,undefined). Seeds: every sweep file of the
# project (sweeps/, sweeps/examples/, tests/sweeps/, tests/bad_sweeps/) and
# every ```yaml block of docs/*.md, written to tests/fuzz/corpus/ as
# seed-<name>. The run uses tests/fuzz/yaml.dict and grows build-fuzz/corpus;
# anything it finds (crash-*, leak-*, timeout-*, oom-*) is copied to
# tests/fuzz/crashes/, where the fuzz_replay ctest test replays it from then on.
# Prints libFuzzer's final statistics (stat::number_of_executed_units = execs).
# Needs: clang, libclang-rt-14-dev (the libFuzzer and sanitizer runtimes).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=${DS_FUZZ_BUILD:-$SRC/build-fuzz}

seed() {
  local f n k=0
  mkdir -p "$HERE/corpus"
  rm -f "$HERE"/corpus/seed-*
  for f in "$SRC"/sweeps/*.yaml "$SRC"/sweeps/examples/*.yaml "$SRC"/tests/sweeps/*.yaml \
           "$SRC"/tests/bad_sweeps/*.yaml; do
    [ -e "$f" ] || continue
    n=${f#"$SRC"/}; n=${n//\//_}
    cp "$f" "$HERE/corpus/seed-$n"
    k=$((k + 1))
  done
  for f in "$SRC"/docs/*.md; do
    awk -v out="$HERE/corpus/seed-docs_$(basename "$f" .md)" '
      /^```yaml/ { n++; on = 1; file = sprintf("%s-%02d.yaml", out, n); printf "" > file; next }
      /^```/ && on { on = 0; close(file); next }
      on { print > file }' "$f"
  done
  k=$(ls "$HERE"/corpus/seed-* | wc -l)
  echo "fuzz: $k seed files in tests/fuzz/corpus"
}

build() {
  command -v clang >/dev/null || { echo "fuzz: clang is not installed (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -Wno-unknown-warning-option" \
    -DDYNSWEEP_FUZZ=ON >/dev/null
  cmake --build "$BUILD" --target fuzz_sweep -j "$(nproc)" 2>&1 | grep -E 'error|warning' || true
  test -x "$BUILD/tests/fuzz_sweep" || test -x "$BUILD/fuzz_sweep" || { echo "fuzz: build failed" >&2; exit 1; }
}

bin() { if [ -x "$BUILD/tests/fuzz_sweep" ]; then echo "$BUILD/tests/fuzz_sweep"; else echo "$BUILD/fuzz_sweep"; fi; }

case "${1:-}" in
  --seed) seed; exit 0 ;;
  --merge)
    build
    mkdir -p "$BUILD/merged"
    rm -f "$BUILD"/merged/*
    "$(bin)" -merge=1 -dict="$HERE/yaml.dict" "$BUILD/merged" "$HERE/corpus" "$BUILD/corpus" 2>&1 | tail -n 3
    # keep the seeds by name, add the rest as fuzz-<sha1>
    find "$HERE/corpus" -name 'fuzz-*' -delete
    for f in "$BUILD"/merged/*; do cp "$f" "$HERE/corpus/fuzz-$(basename "$f")"; done
    # drop the copies of seeds
    for s in "$HERE"/corpus/seed-*; do
      h=$(sha1sum "$s" | cut -c1-40); rm -f "$HERE/corpus/fuzz-$h"
    done
    echo "fuzz: tests/fuzz/corpus has $(ls "$HERE/corpus" | wc -l) files, $(du -sh "$HERE/corpus" | cut -f1)"
    exit 0 ;;
esac

secs=${1:-300}
workers=${2:-1}
seed
build
mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0}
# UBSan stays recoverable in this build so that known.supp can silence the
# findings already reported; halt_on_error makes every other report a crash.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$HERE/known.supp}
cd "$BUILD"
log=$BUILD/fuzz.log
set +e
# fork mode: a finding is saved and fuzzing goes on (-ignore_*), so one run
# collects every distinct finding of its time budget.
"$(bin)" -fork="$workers" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -dict="$HERE/yaml.dict" -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" \
  "$BUILD/corpus" "$HERE/corpus" >"$log" 2>&1
rc=$?
set -e
grep -E '^stat::|Done [0-9]+ runs|SUMMARY|#[0-9]+: cov' "$log" | tail -n 8
# fork mode's progress lines: "#EXECS: cov: .. ft: .. corp: .. exec/s .. oom/timeout/crash: a/b/c"
execs=$(grep -oE '^#[0-9]+: cov' "$log" | tail -n 1 | tr -dc 0-9)
grep -h 'SUMMARY' "$log" | sort | uniq -c | sort -rn | head -n 20 || true
echo "fuzz: exit $rc, $execs executions in ${secs} s, corpus $(ls "$BUILD/corpus" | wc -l) files"
# triage: replay each artifact, group by the sanitizer's SUMMARY line, keep
# one reproducer per distinct finding in tests/fuzz/crashes/
found=0
declare -A seen=()
for a in "$BUILD"/artifacts/*; do
  [ -e "$a" ] || continue
  sum=$("$(bin)" "$a" 2>&1 | grep -m1 -E '^SUMMARY|ERROR: libFuzzer' || echo "no report on replay (flaky?)")
  key=$(sed -E 's/0x[0-9a-f]+//g' <<<"$sum")
  echo "fuzz: $(basename "$a"): $sum"
  [ -n "${seen[$key]:-}" ] && continue
  seen[$key]=1
  cp "$a" "$HERE/crashes/"
  echo "fuzz: FINDING -> tests/fuzz/crashes/$(basename "$a")"
  found=$((found + 1))
done
echo "fuzz: $found distinct finding(s)"
[ "$found" -eq 0 ]
