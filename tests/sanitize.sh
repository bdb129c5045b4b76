#!/usr/bin/env bash
# tests/sanitize.sh -- the whole test suite under AddressSanitizer + UBSan.
#
#   tests/sanitize.sh [CTEST ARGS...]     e.g. tests/sanitize.sh -R config
#   tests/sanitize.sh --build-only         configure and build build-asan/ only
#   (tools/test.sh runs that niced while the plain pass runs its tests)
#   (ctest's output is also kept in build-asan/sanitizer-reports/ctest.log)
#
# Configures build-asan/ with -DDYNSWEEP_SANITIZE=ON (top CMakeLists.txt:
# -fsanitize=address,undefined -fno-omit-frame-pointer on every target),
# builds it and runs ctest there, except the tests that need Slurm and the
# ones whose time goes to repeating C code other tests already run under
# ASan: label "slurm" and names matching $DS_SANITIZE_EXCLUDE (default below).
# Passes when ctest passes and no leak is ours. What is left out, and why:
# - analysis_report (tests/report.sh): its time (~200 s under ASan) is Python
#   (matplotlib/plotly rendering of tools/dynsweep-report, h5py) and headless
#   Chromium; its C part -- plain runs of small/demo/catapult/lr_units/map
#   sweeps, `dynsweep ls`, `export`, `map --fractal-dimension` -- runs under
#   ASan in mapstore, map, analysis_cli, keys, normalised_axes, outcome_eta.
# - the kill and timing tests (kill, resume, durability, attempts, signals,
#   progress_eta, map_isolate: ~900 s of the ~2700 s the pass took): their
#   subject is the process behaviour under SIGKILL/SIGUSR1/timeouts, which
#   ASan's slowdown only blurs; the C paths they drive -- checkpoint write and
#   read (test_worker, cnn_sweep's drain and resume), the journal and publish
#   (verify, fsio_faults, faults, mapstore), map store extension (mapsweep,
#   refine_plan), the retry bookkeeping (run_divergence) -- run under ASan in
#   the tests named. Not run under ASan elsewhere: resume.sh's extension of
#   a sweep store by new grid values (run it with
#   DS_SANITIZE_EXCLUDE='slurm|kill' tests/sanitize.sh -R resume).
# - teams (~240 s): the same sweep on teams of 1, 2 and 4 ranks; the team
#   code runs under ASan in test_diag_4, test_spectra_4, test_dtrain_4 and
#   the CNN team and diagnostics sweeps (cnn_*).
# - the reproductions (repro_*, ~300 s) and python_pkg: science figures and
#   Python; their training, spectra and map code is the code run_determinism,
#   cnn_sweep, cnn_diag, map and mapsweep run under ASan.
# - cnn_team (~95 s under ASan): CNN points on teams of 2 and 3 against one
#   rank; the team paths (samples split, NTK rows over the team, reduce +
#   broadcast) run under ASan in test_cnn_team and on teams of 2 in cnn_diag
#   (Hessian, NTK, full Hessian) and cnn_quad_sweep (f_quad).
# - run_determinism (~65 s): the demo on 1, 2 and 3 ranks compared bit for
#   bit, a property of the build, not of memory safety; the demo runs under
#   ASan in cli, terminal and outcome_eta.
# - cnn_plan_mem: compares plan's memory estimate with a run's peak RSS, which
#   ASan's shadow memory and quarantine inflate; its C paths (plan's cost
#   model, the CNN trainer with f_lin, f_quad and the Hessian) run under ASan
#   in plan, cnn_sweep, cnn_quad_sweep and cnn_diag.
# The plain ctest pass before this one runs every test.
#
# - ASan (memory errors) and UBSan: the first report ends the process
#   (halt_on_error=1) with exit code 86 (ASan) or 87 (UBSan), so the test fails.
# - Leaks (LeakSanitizer, detect_leaks=1) are checked at every process exit,
#   written to build-asan/sanitizer-reports/, and judged here: a leak counts
#   when its allocation stack has a frame in this source tree (src/, tests/,
#   tools/). Our code is built with frame pointers, so its allocations always
#   have full stacks; Open MPI, PMIx, hwloc and HDF5 keep memory until exit
#   that we cannot free, and their frame-pointer-less stacks end in
#   "<unknown module>" (tests/lsan.supp silences the ones that can be named).
#   Known gap: memory a library allocates for us (an HDF5 handle we never
#   close) is attributed to the library.
# Every report file is kept; the summary at the end lists each distinct
# finding once. Exit code: 1 for project leaks, else ctest's.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${DS_ASAN_BUILD:-$SRC/build-asan}
EXCLUDE=${DS_SANITIZE_EXCLUDE:-slurm|kill|^analysis_report\$|^repro_|^(resume|durability|attempts|signals|progress_eta|map_isolate|teams|python_pkg|cnn_plan_mem|cnn_team|run_determinism)\$}
REP=$BUILD/sanitizer-reports

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDYNSWEEP_SANITIZE=ON >/dev/null
cmake --build "$BUILD" -j "${DS_BUILD_JOBS:-$(nproc)}" 2>&1 | grep -E '(error|warning):|Error [0-9]' || true
test -x "$BUILD/dynsweep" || { echo "sanitize: build failed" >&2; exit 1; }
[ "${1:-}" = --build-only ] && exit 0

rm -rf "$REP"
mkdir -p "$REP"
# intercept_tls_get_addr=0: LeakSanitizer's tracer, scanning the dynamic TLS
# blocks it tracks through __tls_get_addr, crashed at exit (SIGSEGV in
# __lsan::ScanRangeForPointers, always at address 0xbe0) in 28 of 46
# processes of 4 tests on this host (Debian's GCC 12 libasan); the process
# then exits with LSAN's exitcode 0 instead of its own. Without the
# interception: 0 of 26. Our thread-locals are static TLS (still scanned).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:intercept_tls_get_addr=0:log_path=$REP/asan${ASAN_OPTIONS_EXTRA:+:$ASAN_OPTIONS_EXTRA}"
export LSAN_OPTIONS="exitcode=0:suppressions=$SRC/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$REP/ubsan"

# tests that repeat one C path many times repeat it fewer times here (verify's
# bit-flip campaign: 2 flips per region instead of 4)
export DS_SANITIZE_PASS=1
cd "$BUILD"
echo "sanitize: ctest in $BUILD (excluding label slurm and /$EXCLUDE/); reports in $REP"
# report files in which LeakSanitizer's tracer crashed (see below)
tracer_crashes() { { grep -l "LeakSanitizer has encountered a fatal error" "$REP"/* 2>/dev/null || true; } | wc -l; }
rc=0
ctest --output-on-failure -j 2 -LE slurm -E "$EXCLUDE" "$@" 2>&1 | tee "$REP/ctest.log" || rc=$?
# LeakSanitizer's stop-the-world tracer now and then crashes at a process's
# exit ("Tracer caught signal 11" ... "LeakSanitizer has encountered a fatal
# error", google/sanitizers#1353); the process then exits with LSAN's
# exitcode, 0 here, in place of its own (in CI runs here: mapsweep,
# map_measure, terminal, knobs, cnn_diag_torch, whose runs must exit 2, saw
# 0). The cause found here is set aside above (intercept_tls_get_addr=0);
# should the tracer still crash and tests fail, the failed tests run once
# more and the pass is the second run's verdict (a real failure fails again).
tracer=$(tracer_crashes)
if [ "$rc" -ne 0 ] && [ "$tracer" -gt 0 ]; then
  echo "sanitize: LeakSanitizer's tracer crashed at exit in $tracer process(es), which then exit 0;" \
       "the failed tests once more:"
  # by name: ctest --rerun-failed ignores -LE/-E and so reads the failed
  # tests' numbers in another numbering (it once reran resume for knobs)
  failed=$(sed -n 's/^[0-9]*://p' Testing/Temporary/LastTestsFailed.log | paste -sd '|')
  echo "sanitize: $failed"
  rc=0
  ctest --output-on-failure -j 2 -R "^($failed)\$" 2>&1 | tee -a "$REP/ctest.log" || rc=$?
fi

# ---- summary: each distinct finding once
nfiles=$(find "$REP" -type f -name "*san.*" | wc -l)
errors=$(cat "$REP"/* 2>/dev/null | grep -hoE '[^ ]+\.c:[0-9]+:[0-9]+: runtime error: .*|ERROR: AddressSanitizer: [a-z-]+.*' |
         sed -E 's/0x[0-9a-f]+//g' | sort | uniq -c | sort -rn || true)
# leaks: the first frame in this source tree of each leak report
ours=$(cat "$REP"/* 2>/dev/null | awk -v src="$SRC/" '
  /^(Direct|Indirect) leak of/ { inleak = 1; what = $1 " " $4 " bytes"; next }
  inleak && /^ *#[0-9]+ / && (index($0, " " src "src/") || index($0, " " src "tests/") || index($0, " " src "tools/")) { sub(/^ *#[0-9]+ 0x[0-9a-f]+ in /, ""); print "leak (" what "): " $0; inleak = 0; next }
  /^$/ { inleak = 0 }' | sed -E 's/[0-9]+ bytes/N bytes/' | sort | uniq -c | sort -rn || true)
libleaks=$(cat "$REP"/* 2>/dev/null | grep -cE '^(Direct|Indirect) leak of' || true)
echo "sanitize: $nfiles report file(s) in $REP"
tracer=$(tracer_crashes)
[ "$tracer" -eq 0 ] || echo "sanitize: LeakSanitizer's tracer crashed at exit in $tracer process(es) (leaks there unchecked)"
if [ -n "$errors" ]; then echo "sanitize: ASan/UBSan reports:"; echo "$errors"; fi
if [ -n "$ours" ]; then
  echo "sanitize: leaks in dynsweep code:"; echo "$ours"
  [ "$rc" -eq 0 ] && rc=1
else
  echo "sanitize: no leak in dynsweep code ($libleaks leak record(s) inside Open MPI/PMIx/HDF5 libraries ignored)"
fi
exit "$rc"
