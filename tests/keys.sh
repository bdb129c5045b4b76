#!/usr/bin/env bash
# keys.sh -- issue 24, item 5: the key reference cannot drift from the parser.
# docs/sweep-spec.md's "Key index" must equal `dynsweep keys --markdown`
# (generated from the option table and the structural keys the parser reads:
# tools/update-keys.sh rewrites it); the keys the issue found missing are in
# it; every option the parser accepts is listed once; and no doc, sweep or
# tool points outside the repository (../shared/ is not in a clone).
. "$(dirname "$0")/lib.sh"
doc=$DS_SRC/docs/sweep-spec.md
"$DYNSWEEP" keys --markdown >"$T/gen.md"
awk '/^<!-- keys:end/ { on = 0 } on { print } /^<!-- keys:begin/ { on = 1 }' "$doc" >"$T/doc.md"
check "docs/sweep-spec.md's Key index equals 'dynsweep keys --markdown' (else run tools/update-keys.sh)" \
  diff "$T/doc.md" "$T/gen.md"
for k in optimizer.lr_units map map.tile grid.refine.levels grid.refine.axes grid.replicas name seed overrides; do
  check "the index lists '$k'" grep -q "^| \`$k\` |" "$T/gen.md"
done
check "data.kind lists iid_gaussian" grep -q '^| `data.kind` |.*`iid_gaussian`' "$T/gen.md"
# every option of the table: a dotted path the parser accepts (--set finds it)
n=0 bad_keys=""
for k in $(awk -F'`' '/^\| `[a-z_]+\.[a-z_.]+` \|/ {print $2}' "$T/gen.md" | grep -v '^grid\.\|^map\.'); do
  n=$((n + 1))
  "$DYNSWEEP" plan "$DS_SRC/sweeps/demo.yaml" --set "$k=bogus-value-xyz" >"$T/p" 2>&1 || true
  grep -q "unknown key\|unknown option" "$T/p" && bad_keys="$bad_keys $k"
done
check "every one of the $n option paths is one the parser knows (unknown:${bad_keys:- none})" test -z "$bad_keys"
check "dynsweep keys (text) fits 80 columns but for long defaults" \
  test "$("$DYNSWEEP" keys | awk 'length > 80 && !/default/' | wc -l)" -eq 0
rc=$(code "$DYNSWEEP" keys --bogus)
check "dynsweep keys --bogus: exit 2 with the usage (got $rc)" bash -c "[ $rc = 2 ] && grep -q 'usage: dynsweep keys' '$T/err'"
refs=$(cd "$DS_SRC" && grep -rln '\.\./shared/' README.md docs sweeps tools python bench 2>/dev/null | tr '\n' ' ' || true)
check "no doc, sweep, tool or package file points to ../shared/ (a clone has none): ${refs:-none}" test -z "$refs"
report
