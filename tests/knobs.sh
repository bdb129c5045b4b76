#!/usr/bin/env bash
# knobs.sh -- issue 25: every DYNSWEEP_* environment setting is in one table
# (src/util/knobs.c). docs/environment.md's table equals `dynsweep version
# --knobs --markdown` (tools/update-keys.sh rewrites it); every DYNSWEEP_
# name in src/ and include/ is in the table, and only knobs.c calls getenv on
# one (the scan is checked to catch a planted getenv); `dynsweep version`
# lists the knobs set. And DS_TRY's places: `run -v` prints the file:line of
# each DS_TRY (and the ds_fail) an error went through, plain `run` does not.
. "$(dirname "$0")/lib.sh"
doc=$DS_SRC/docs/environment.md
"$DYNSWEEP" version --knobs --markdown >"$T/gen.md"
awk '/^<!-- knobs:end/ { on = 0 } on { print } /^<!-- knobs:begin/ { on = 1 }' "$doc" >"$T/doc.md"
check "docs/environment.md's table equals 'dynsweep version --knobs --markdown' (else run tools/update-keys.sh)" \
  diff "$T/doc.md" "$T/gen.md"
awk -F'`' '/^\| `DYNSWEEP_[A-Z0-9_]+` \|/ {print $2}' "$T/gen.md" | sort >"$T/table"
n=$(wc -l <"$T/table")
check "the table has knobs ($n) and no name twice" bash -c "[ $n -ge 20 ] && [ -z \"\$(uniq -d '$T/table')\" ]"
"$DYNSWEEP" version --knobs >"$T/all"
check "version --knobs (text) lists the same $n names" \
  diff "$T/table" <(grep -oE '^DYNSWEEP_[A-Z0-9_]+' "$T/all" | sort)
check "version --knobs fits 80 columns" test "$(awk 'length > 80' "$T/all" | wc -l)" -eq 0

# names_in DIR...: every DYNSWEEP_ name in C sources and headers (comments
# too: a documented name must exist) but header guards and the version macro
getenv_names() { { grep -rhoE --include='*.[ch]' 'getenv\("DYNSWEEP_[A-Z0-9_]+"' "$@" || true; } | sed -E 's/getenv\("//; s/"$//' | sort -u; }
all_names() { grep -rhoE --include='*.[ch]' 'DYNSWEEP_[A-Z0-9_]+' "$@" | grep -vE '_H$|^DYNSWEEP_VERSION$' | sort -u; }
direct_getenv() { grep -rlE --include='*.[ch]' 'getenv\("DYNSWEEP_' "$@" | grep -v 'src/util/knobs\.c$' || true; }
# the scan finds a planted reader (so that the checks below can fail)
mkdir -p "$T/fake/src/x"
printf 'const char *v = getenv("DYNSWEEP_PLANTED_KNOB");\n' >"$T/fake/src/x/y.c"
check "the scan finds a planted getenv(\"DYNSWEEP_PLANTED_KNOB\") and flags it" bash -c \
  "[ \"\$(cd '$T/fake' && grep -rhoE --include='*.[ch]' 'getenv\(\"DYNSWEEP_[A-Z0-9_]+\"' src | sed -E 's/getenv\(\"//; s/\"\$//' | comm -23 - '$T/table')\" = DYNSWEEP_PLANTED_KNOB ]"
missing=$(cd "$DS_SRC" && getenv_names src include | comm -23 - "$T/table" | tr '\n' ' ')
check "every getenv(\"DYNSWEEP_...\") in src/ and include/ is in the table (missing: ${missing:-none})" test -z "$missing"
missing=$(cd "$DS_SRC" && all_names src include | comm -23 - "$T/table" | tr '\n' ' ')
check "every DYNSWEEP_ name in src/ and include/ is in the table (missing: ${missing:-none})" test -z "$missing"
direct=$(cd "$DS_SRC" && direct_getenv src include | tr '\n' ' ')
check "only src/util/knobs.c calls getenv on a DYNSWEEP_ name; readers use ds_knob_* (direct: ${direct:-none})" test -z "$direct"
# every DS_KNOB_ of knobs.h is read somewhere
unused=""
for k in $(grep -oE '^  DS_KNOB_[A-Z0-9_]+' "$DS_SRC/include/dynsweep/knobs.h" | grep -v DS_KNOB_COUNT); do
  grep -rqE --include='*.c' "\b$k\b" "$DS_SRC/src" --exclude=knobs.c || unused="$unused $k"
done
check "every DS_KNOB_ of the table is read in src/ (unused:${unused:- none})" test -z "$unused"

# dynsweep version: how many, where documented, the ones set
out=$("$DYNSWEEP" version)
check "version says $n knobs are known, where they are documented, none set" bash -c \
  "echo '$out' | grep -qx 'knobs: $n DYNSWEEP_\* environment settings known (dynsweep version --knobs, docs/environment.md); 0 set'"
out=$(env DYNSWEEP_SVD=scalapack DYNSWEEP_PROGRESS=log DYNSWEEP_NOT_A_KNOB=1 "$DYNSWEEP" version)
check "version lists the knobs set, with their values (and not an unknown name)" bash -c \
  "echo '$out' | grep -q '; 2 set:\$' && echo '$out' | grep -qx '  DYNSWEEP_SVD=scalapack' && echo '$out' | grep -qx '  DYNSWEEP_PROGRESS=log' && ! echo '$out' | grep -q NOT_A_KNOB"
rc=$(code "$DYNSWEEP" version --bogus)
check "version --bogus: exit 2 with the usage (got $rc)" bash -c "[ $rc = 2 ] && grep -q 'usage: dynsweep version' '$T/err'"
rc=$(code "$DYNSWEEP" version --knobs --markdown more)
check "version --knobs --markdown more: exit 2 (got $rc)" test "$rc" = 2
check "version --help names --knobs" bash -c "'$DYNSWEEP' version --help | grep -q -- '--knobs'"

# DS_TRY: the places of an error with -v only
printf 'name: knobs-bad\nseed: 1\n' >"$T/bad.yaml"
rc1=$(code "$DYNSWEEP" run "$T/bad.yaml" -o "$T/bad.h5" -q); cp "$T/err" "$T/plain"
rc2=$(code "$DYNSWEEP" run "$T/bad.yaml" -o "$T/bad.h5" -q -v); cp "$T/err" "$T/verbose"
check "a bad sweep: exit 2 with and without -v ($rc1, $rc2)" test "$rc1" = 2 -a "$rc2" = 2
check "without -v: the message alone, no places" bash -c "[ \$(wc -l <'$T/plain') = 1 ] && ! grep -q ':   at ' '$T/plain'"
check "with -v: the same message, then the places" bash -c \
  "diff '$T/plain' <(grep -v '^dynsweep:   at ' '$T/verbose') && grep -qE '^dynsweep:   at src/config/[a-z_]+\.c:[0-9]+ \([a-z_0-9]+\)\$' '$T/verbose'"
bad_loc=""
while read -r f l; do
  sed -n "${l}p" "$DS_SRC/$f" | grep -qE 'DS_TRY\(|ds_fail\(' || bad_loc="$bad_loc $f:$l"
done < <(sed -nE 's/^dynsweep:   at ([^:]+):([0-9]+) .*/\1 \2/p' "$T/verbose")
check "each place printed is a DS_TRY or ds_fail line of that file (wrong:${bad_loc:- none})" test -z "$bad_loc"
rc=$(code "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" -o "$T/no/such/dir/s.h5" -q -v)
check "a store that cannot be created, -v: exit 1 and a place in src/store/ (got $rc)" bash -c \
  "[ $rc = 1 ] && grep -qE '^dynsweep:   at src/store/[a-z_]+\.c:[0-9]+ ' '$T/err'"
report
