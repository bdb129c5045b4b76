#!/usr/bin/env bash
# tests/sanitize.sh -- the whole test suite under AddressSanitizer + UBSan.
#
#   tests/sanitize.sh [CTEST ARGS...]     e.g. tests/sanitize.sh -R config
#
# Configures build-asan/ with -DDYNSWEEP_SANITIZE=ON (top CMakeLists.txt:
# -fsanitize=address,undefined on every target), builds it and runs ctest
# there, except the tests that are too slow under the sanitizers or need
# Slurm: label "slurm" and names matching $DS_SANITIZE_EXCLUDE (default
# 'slurm|kill'). Sanitizer settings: any report fails the test
# (halt_on_error), leaks are checked at exit (detect_leaks=1) with
# tests/lsan.supp silencing what Open MPI, PMIx, hwloc and HDF5 keep
# allocated until exit (their allocations, never ours: a suppression names
# only a library). The fuzz reproducers in tests/fuzz/crashes are replayed
# strictly here (test fuzz_replay). Exit code: ctest's.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${DS_ASAN_BUILD:-$SRC/build-asan}
EXCLUDE=${DS_SANITIZE_EXCLUDE:-slurm|kill}

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDYNSWEEP_SANITIZE=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)" 2>&1 | grep -E 'error|warning' || true
test -x "$BUILD/dynsweep" || { echo "sanitize: build failed" >&2; exit 1; }

# halt_on_error: the first report fails the process; exitcode 86 is unlike
# any exit code of dynsweep. abort_on_error=0 keeps it an exit, not a core.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:${ASAN_OPTIONS_EXTRA:-}"
export LSAN_OPTIONS="suppressions=$SRC/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87"

cd "$BUILD"
echo "sanitize: ctest in $BUILD (excluding label slurm and /$EXCLUDE/)"
ctest --output-on-failure -j 2 -LE slurm -E "$EXCLUDE" "$@"
