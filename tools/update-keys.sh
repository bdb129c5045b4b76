#!/usr/bin/env bash
# tools/update-keys.sh [DYNSWEEP] -- regenerates the tables the docs take
# from the binary's own tables (between their begin and end markers):
#   the "Key index" of docs/sweep-spec.md   from `dynsweep keys --markdown`
#   the table of docs/environment.md        from `dynsweep version --knobs --markdown`
#   the tables of docs/models.md            from `dynsweep models --markdown`
# tests/keys.sh, tests/knobs.sh and tests/models.sh fail while a doc and its
# table differ.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=${1:-$ROOT/build/dynsweep}
table=$(mktemp)
trap 'rm -f "$table" "$ROOT"/docs/*.md.tmp' EXIT
# splice DOC MARKER COMMAND...: the output of COMMAND between DOC's markers
splice() {
  local doc=$ROOT/$1 marker=$2
  shift 2
  "$@" >"$table"
  awk -v t="$table" -v m="$marker" '
    $0 ~ "^<!-- " m ":begin" { print; while ((getline l < t) > 0) print l; skip = 1; next }
    $0 ~ "^<!-- " m ":end" { skip = 0 }
    !skip { print }' "$doc" >"$doc.tmp"
  mv "$doc.tmp" "$doc"
  echo "update-keys: $(wc -l <"$table") lines into $doc"
}
splice docs/sweep-spec.md keys "$D" keys --markdown
splice docs/environment.md knobs "$D" version --knobs --markdown
splice docs/models.md models "$D" models --markdown
