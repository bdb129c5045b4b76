# tests/lib.sh -- shared helpers for the shell tests (sourced).
set -euo pipefail
: "${DYNSWEEP:?DYNSWEEP must point to the dynsweep binary (ctest sets it)}"
: "${DS_SRC:?DS_SRC must point to the source tree}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
ok()   { passes=$((passes + 1)); echo "ok: $*"; }
bad()  { fails=$((fails + 1)); echo "FAIL: $*" >&2; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
report() { echo "$(basename "$0" .sh): $passes passed, $fails failed"; [ "$fails" -eq 0 ]; }
drun() { mpirun --oversubscribe -n "$1" "$DYNSWEEP" run "${@:2}"; }
