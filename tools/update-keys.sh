#!/usr/bin/env bash
# tools/update-keys.sh [DYNSWEEP] -- regenerates the "Key index" of
# docs/sweep-spec.md from `dynsweep keys --markdown` (between the keys:begin
# and keys:end markers). tests/keys.sh fails while the two differ.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=${1:-$ROOT/build/dynsweep}
DOC=$ROOT/docs/sweep-spec.md
table=$(mktemp)
trap 'rm -f "$table" "$DOC.tmp"' EXIT
"$D" keys --markdown >"$table"
awk -v t="$table" '
  /^<!-- keys:begin/ { print; while ((getline l < t) > 0) print l; skip = 1; next }
  /^<!-- keys:end/ { skip = 0 }
  !skip { print }' "$DOC" >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
echo "update-keys: $(wc -l <"$table") lines into $DOC"
