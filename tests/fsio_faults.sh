#!/usr/bin/env bash
# Deterministic file-system faults through the store's file door
# (src/store/fsio.c, issue 25): DYNSWEEP_TEST_FSFAIL=op:N[:errno] fails the
# Nth call of one operation as the OS would, so the store's own error paths
# run at a chosen point (tests/faults.sh injects the real faults: a full
# disk, a file size limit, a read-only directory). For a row store and a
# segmented one (format 5), a failed fsync and a failed rename during a
# publish: the run exits 1 with one message naming the file and the
# operation; STORE keeps exactly the generation of the last publish that
# succeeded (a real number: a publish renames once and a row store's
# publish fsyncs one file, so rename:N leaves generation N + 1 and a row
# store's fsync:N generation N, as measured), verifies, holds every finished point complete and equal to
# an uninterrupted run, and no segment or block file of the failed publish
# is left; a rerun without the fault resumes to a store equal point by point
# to the uninterrupted run. Also: a failed journal sync, a failed journal
# truncate (row store; segmented store at creation), a failed create of a
# segment file, a failed mkdir of the
# segment directory at creation, a reserve that finds no room (errno by
# name) and a spec the seam cannot parse.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/tests/sweeps/durability.yaml
drun 2 "$sweep" -o "$T/ref.h5" -q
gen_of() { h5dump -a generation "$1" 2>/dev/null | awk '/\(0\)/ {print $2}'; }
last_error() { grep '^dynsweep: ' "$T/err" | tail -1 || true; }
# garbage segment/block files in STORE.seg (fields 3-6 of seg_files.py)
garbage() { "$PY" "$DS_SRC/tests/seg_files.py" "$1" | awk '{print $3 + $4 + $5 + $6}'; }

# fsfail NAME SEGMENTS SPEC GEN PATTERN: a run with DYNSWEEP_TEST_FSFAIL=SPEC,
# publishing after every message; GEN: the generation STORE must keep
# (">=K": at least K); PATTERN: what the one error must say
fsfail() {
  local name=$1 seg=$2 spec=$3 want=$4 pat=$5 st=$T/$1.h5 g
  rc=$(export DYNSWEEP_STORE_SEGMENTS=$seg DYNSWEEP_PUBLISH_FACTOR=0 DYNSWEEP_TEST_FSFAIL=$spec
       code drun 2 "$sweep" -o "$st" -q --publish-every 0)
  msg=$(last_error)
  echo "  $name ($spec): exit $rc: $msg"
  check "$name: exit 1 (got $rc)" test "$rc" = 1
  check "... one clear error: $pat" bash -c 'echo "$0" | grep -qE "$1"' "$msg" "$pat"
  check "... no $name.h5.tmp left" test ! -e "$st.tmp"
  g=$(gen_of "$st")
  if [ "${want#>=}" != "$want" ]; then
    check "... STORE keeps generation >= ${want#>=} (got $g)" test "${g:-0}" -ge "${want#>=}"
  else
    check "... STORE keeps generation $want (got $g)" test "${g:-0}" = "$want"
  fi
  check "... verify passes" "$DYNSWEEP" verify "$st"
  check "... finished points complete, equal to the uninterrupted run" deep_check "$st" "$T/ref.h5"
  if [ "$seg" = 1 ] && [ "$HAVE_H5PY" = 1 ]; then
    check "... no segment or block file of the failed publish left (got $(garbage "$st"))" \
      test "$(garbage "$st")" = 0
  fi
  rc=$(export DYNSWEEP_STORE_SEGMENTS=$seg; code drun 2 "$sweep" -o "$st" -q)
  check "... a rerun without the fault resumes and completes (exit $rc)" test "$rc" = 0
  check "... equal to the uninterrupted run" same_points "$T/ref.h5" "$st"
  check "... and verifies" "$DYNSWEEP" verify "$st"
}

# ---- a row store (format 4) ------------------------------------------------------
fsfail row_fsync 0 fsync:3 3 \
  'publishing failed; the store keeps its last published state.*row_fsync\.h5\.tmp: cannot fsync: Input/output error'
fsfail row_rename 0 rename:2 3 \
  'publishing failed.*cannot rename .*row_rename\.h5\.tmp onto .*row_rename\.h5: Input/output error'
# ---- a segmented store (format 5): creation fsyncs 3 files (two block files
# and STORE.tmp), so fsync:4 is the first publish's; a later one may be a
# segment's, a block's or STORE.tmp's
fsfail seg_fsync 1 fsync:4 2 \
  'publishing failed.*seg_fsync\.h5(\.tmp|\.seg/[0-9a-f]+-[a-z0-9-]+\.h5): cannot fsync: Input/output error'
fsfail seg_fsync_late 1 fsync:9 '>=3' \
  'publishing failed.*seg_fsync_late\.h5(\.tmp|\.seg/[0-9a-f]+-[a-z0-9-]+\.h5): cannot fsync: Input/output error'
fsfail seg_rename 1 rename:3 4 \
  'publishing failed.*cannot rename .*seg_rename\.h5\.tmp onto .*seg_rename\.h5: Input/output error'
# ---- the journal's sync, a reserve without room (errno by name) ---------------------
fsfail journal_sync 0 jsync:2:EIO '>=1' 'journal_sync\.h5\.journal: cannot (fsync|reset) the journal: Input/output error'
fsfail reserve_full 0 reserve:3:ENOSPC '>=2' \
  'publishing failed.*reserve_full\.h5\.tmp: No space left on device: publishing needs about [0-9]+ bytes'
# ---- the journal's truncate (its reset after a publish): the store published,
# the journal not emptied; at a segmented store's creation (the first
# truncate: generation 1) and at a row store's later publish
fsfail journal_truncate 0 truncate:2 3 \
  'journal_truncate\.h5\.journal: cannot reset the journal: Input/output error'
fsfail seg_truncate_create 1 truncate:1 1 \
  'seg_truncate_create\.h5\.journal: cannot reset the journal: Input/output error'
# ---- a failed create (open with O_CREAT) of a segment or block file during
# a segmented store's publish (the 6th create: after the journal, STORE.tmp
# and the files of the creation and first publish)
fsfail seg_create 1 create:6 4 \
  'publishing failed.*seg_create\.h5\.seg/[0-9a-f]+-[a-z0-9-]+\.h5: cannot create: Input/output error'

# ---- a failed mkdir of STORE.seg/ when a segmented store is created: exit 1,
# one message naming the directory and the operation, nothing left behind
# (no STORE, STORE.tmp, journal or directory), and a rerun equal to the
# uninterrupted run
st=$T/seg_mkdir.h5
rc=$(export DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_TEST_FSFAIL=mkdir:1:EACCES
     code drun 2 "$sweep" -o "$st" -q)
msg=$(last_error)
echo "  seg_mkdir (mkdir:1:EACCES): exit $rc: $msg"
check "seg_mkdir: exit 1 (got $rc)" test "$rc" = 1
check "... one clear error naming STORE.seg and mkdir" bash -c 'echo "$0" | grep -qE "$1"' "$msg" \
  'seg_mkdir\.h5: cannot create the segment directory .*seg_mkdir\.h5\.seg: Permission denied'
for f in "$st" "$st.tmp" "$st.journal" "$st.seg"; do check "... no ${f##*/} left" test ! -e "$f"; done
rc=$(export DYNSWEEP_STORE_SEGMENTS=1; code drun 2 "$sweep" -o "$st" -q)
check "... a rerun without the fault completes (exit $rc)" test "$rc" = 0
check "... equal to the uninterrupted run" same_points "$T/ref.h5" "$st"
check "... and verifies" "$DYNSWEEP" verify "$st"

# ---- a spec the seam cannot parse: said once, nothing injected ----------------------
rc=$(export DYNSWEEP_TEST_FSFAIL=fsync; code drun 2 "$sweep" -o "$T/bogus.h5" -q)
check "unparsable DYNSWEEP_TEST_FSFAIL: the run completes (exit $rc)" test "$rc" = 0
check "... and says the spec is not op:N[:errno]" grep -q "DYNSWEEP_TEST_FSFAIL='fsync' is not op:N" "$T/err"
check "... equal to the uninterrupted run" same_points "$T/ref.h5" "$T/bogus.h5"
report
