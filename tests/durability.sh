#!/usr/bin/env bash
# Kill test (issue 5, "Store durability"): a sweep is killed with SIGKILL --
# mpirun and all its ranks at once -- at random moments (fixed seed), at
# least DS_KILLS (50) times over the test, and resumed each time. After EVERY
# kill: if the store exists, h5dump -H opens it, `dynsweep ls` and `status`
# read it, and every point it marks finished has all its series written,
# equal bit for bit to an uninterrupted run's (tests/store_check.py, h5py).
# Each round of kills and resumes ends with the sweep complete and every point
# identical to the uninterrupted run's (tests/store_diff.py). Workers checkpoint every
# 0.05 s, so killed points also resume mid-trajectory (when the worker
# implements ds_ckpt). Rank counts (1, 2 or 3) and
# kill moments (after the start: MPI start-up, store creation,
# training, journaling, publishing) vary with the seed; the moments are
# spread over 0.05 s .. the length of an uninterrupted run on this machine.
# Odd rounds write a format-5 store (DYNSWEEP_STORE_SEGMENTS=1: /series over
# segment files, docs/store.md "Segments") with a publish at every 0.05 s
# (DYNSWEEP_PUBLISH_FACTOR=0) and a small merge cap (DYNSWEEP_SEG_CAP), so
# kills land while segments are written and merged; even rounds format 4.
# Format-5 rounds also keep /summary, /series/index and /grid/axis_values in
# row blocks of 4 rows (DYNSWEEP_BLOCK_ROWS; blocks.c), so a publish rewrites
# summary blocks and kills land while they are written (counted, required).
# Random moments hit those writes only now and then (0 of 66 format-5 kills in
# one ASan run), so the first run of every other format-5 round is killed the
# moment a new summary block file appears (tests/kill_on_file.py), before the
# store lists it.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/tests/sweeps/durability.yaml
KILLS=${DS_KILLS:-50}
RANDOM=20261122 # fixed seed for the kill moments and rank counts
# --max-attempts: these kills hit the whole job, not a point's fault; a point
# running at several of them must still finish (tests/attempts.sh tests the limit)
opts=(-q --publish-every 0.2 --checkpoint-every 0.05 --max-attempts 1000)
t_start=$(date +%s)

t0=$(date +%s%N)
drun 2 "$sweep" -o "$T/ref.h5" -q
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "reference run complete (${ref_ms} ms)" test -s "$T/ref.h5"
# kill moments spread over a run's length on this machine (start-up included)
span_ms=$(( ref_ms > 1200 ? ref_ms : 1200 ))
[ "$HAVE_H5PY" = 1 ] || echo "note: /usr/bin/python3 with h5py not available; deep checks reduced to h5dump -H"

kills=0 round=0 badkill=0 dumps=0 lists=0 deeps=0 completes=0 midpub=0 replays=0 ckres=0
segkills=0 segmid=0 mergemid=0 segrounds=0 merged=0 summid=0 blkmid=0 aimkills=0 aimsum=0
seg_files() { "$PY" "$DS_SRC/tests/seg_files.py" "$1"; }
# the checks after each kill (store_check.py, seg_files.py) and each round
# (store_diff.py) are answered by one
# Python process for the whole test (tests/store_checkd.py): a start-up of
# Python with h5py and numpy cost more than the check itself, twice a kill
if [ "$HAVE_H5PY" = 1 ]; then
  mkfifo "$T/chk.in" "$T/chk.out"
  "$PY" "$DS_SRC/tests/store_checkd.py" <"$T/chk.in" >"$T/chk.out" 2>&1 &
  exec 7>"$T/chk.in" 8<"$T/chk.out"
  # chk REQUEST ARGS...: its output; its exit code (1 if the checker is gone).
  # The whole answer is read before any of it is printed, so a caller that
  # stops reading early (read < <(seg_files ...)) leaves nothing behind
  chk() {
    local l out=
    (IFS=$'\t'; printf '%s\n' "$*") >&7 || return 1
    while IFS= read -r l <&8; do
      case $l in "=rc "*) printf '%s' "$out"; return "${l#=rc }" ;; *) out+="$l"$'\n' ;; esac
    done
    echo "store_checkd.py ended" >&2; return 1
  }
  deep_check() { chk check "$@"; }
  seg_files() { chk seg "$1"; }
  same_points() { chk diff "$1" "$2"; }
fi
# at least KILLS kills, and on (at most 2 x KILLS) until one has landed in
# a format-5 publish (a segment written or merged, not yet listed). Which
# phase a kill hits is timing: a merge of these small segments takes a few
# ms, and an unloaded run can see 0 of 45 format-5 kills inside one (5 of 32
# on a loaded machine), so merges are counted and reported, not required
need_more() {
  [ "$kills" -lt "$KILLS" ] && return 0
  [ "$HAVE_H5PY" = 1 ] && [ "$kills" -lt $((2 * KILLS)) ] && { [ $((segmid + mergemid)) -eq 0 ] || [ "$summid" -eq 0 ]; }
}
while need_more; do
  round=$((round + 1))
  st=$T/r$round.h5
  if [ $((round % 2)) = 1 ]; then
    export DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_PUBLISH_FACTOR=0 DYNSWEEP_SEG_CAP=150000 DYNSWEEP_BLOCK_ROWS=4
    opts[2]=0.05; segrounds=$((segrounds + 1))
  else
    unset DYNSWEEP_STORE_SEGMENTS DYNSWEEP_PUBLISH_FACTOR DYNSWEEP_SEG_CAP DYNSWEEP_BLOCK_ROWS
    opts[2]=0.2
  fi
  runs=0 done=0
  while [ "$done" = 0 ]; do
    runs=$((runs + 1))
    if [ "$runs" -gt 200 ]; then bad "round $round: not complete after 200 runs"; break; fi
    np=$((1 + RANDOM % 3))
    delay_ms=$((50 + (RANDOM * 32768 + RANDOM) % span_ms))
    start_bg "$T/run.log" -n "$np" "$DYNSWEEP" run "$sweep" -o "$st" "${opts[@]}"
    aimed=0
    if [ $((round % 4)) = 1 ] && [ "$runs" = 1 ] && [ "$HAVE_H5PY" = 1 ]; then
      # the first run of every other format-5 round: killed the moment a
      # publish writes a new summary block file (kill_on_file.py: after the
      # store is created), before the store lists it
      "$PY" "$DS_SRC/tests/kill_on_file.py" "$SID" "$st" "$st.seg" '[0-9a-f]{16}-sum-[0-9]+-[0-9]+\.h5' \
        "$(( span_ms / 1000 + 5 ))" >"$T/aimed" && aimed=1
    else
      # sleep until the kill moment unless the run ends first
      t_end=$(( $(date +%s%N) / 1000000 + delay_ms ))
      while bg_running && [ "$(( $(date +%s%N) / 1000000 ))" -lt "$t_end" ]; do sleep 0.02; done
    fi
    if [ "$aimed" = 1 ] || bg_running; then
      kill_session "$SID" || bad "round $round run $runs: processes survived SIGKILL"
      [ "$aimed" = 1 ] && aimkills=$((aimkills + 1))
      kills=$((kills + 1))
      wait_bg
      [ -e "$st.tmp" ] && midpub=$((midpub + 1))
      if [ -n "${DYNSWEEP_STORE_SEGMENTS:-}" ] && [ "$HAVE_H5PY" = 1 ] && [ -e "$st" ]; then
        segkills=$((segkills + 1))
        read -r _ _ g gm gs gb < <(seg_files "$st")
        [ "${g:-0}" -gt 0 ] && segmid=$((segmid + 1))
        [ "${gm:-0}" -gt 0 ] && mergemid=$((mergemid + 1))
        [ "${gs:-0}" -gt 0 ] && summid=$((summid + 1)) && [ "$aimed" = 1 ] && aimsum=$((aimsum + 1))
        [ "${gb:-0}" -gt 0 ] && blkmid=$((blkmid + 1))
      fi
      [ -e "$st.journal" ] && [ "$(stat -c %s "$st.journal")" -gt 64 ] && replays=$((replays + 1))
      when="at ${delay_ms} ms"; [ "$aimed" = 1 ] && when="at new summary block $(cat "$T/aimed")"
      what="kill $kills (round $round run $runs, -n $np, $when)"
    else
      wait_bg; rc=$RC
      if [ "$rc" -ne 0 ]; then bad "round $round run $runs: exit $rc"; cat "$T/run.log" >&2; break; fi
      completes=$((completes + 1))
      done=1
      what="round $round completed by run $runs (-n $np)"
    fi
    n=$(sed -nE 's/.*to run \(([0-9]+) from a checkpoint\).*/\1/p' "$T/run.log" | head -1)
    ckres=$((ckres + ${n:-0}))
    if [ -e "$st" ]; then
      if h5dump -H "$st" >/dev/null 2>"$T/h5err"; then dumps=$((dumps + 1))
      else badkill=$((badkill + 1)); bad "$what: h5dump -H cannot open the store"; cat "$T/h5err" >&2; fi
      if "$DYNSWEEP" ls "$st" >/dev/null 2>"$T/lserr" && "$DYNSWEEP" status "$st" >/dev/null 2>&1; then
        lists=$((lists + 1))
      else badkill=$((badkill + 1)); bad "$what: dynsweep ls/status fail"; cat "$T/lserr" >&2; fi
      if deep_check "$st" "$T/ref.h5" >"$T/deep" 2>&1; then deeps=$((deeps + 1))
      else badkill=$((badkill + 1)); bad "$what: deep check"; cat "$T/deep" >&2; fi
    fi
  done
  check "round $round ($runs runs): every point equals the uninterrupted run's (store_diff.py)" \
    same_points "$T/ref.h5" "$st"
  "$DYNSWEEP" ls "$T/ref.h5" | awk '{ $(NF-1)=""; $NF=""; print }' >"$T/lsref"
  "$DYNSWEEP" ls "$st" | awk '{ $(NF-1)=""; $NF=""; print }' >"$T/lsst"
  check "round $round: ls equal to the uninterrupted run's (timings excluded)" cmp -s "$T/lsref" "$T/lsst"
  check "round $round: no journal or tmp file left" test ! -e "$st.journal" -a ! -e "$st.tmp"
  check "round $round: state complete" bash -c "'$DYNSWEEP' status '$st' | grep -q 'state:   complete'"
  if [ -n "${DYNSWEEP_STORE_SEGMENTS:-}" ] && [ "$HAVE_H5PY" = 1 ]; then
    read -r nl nr g gm gs gb < <(seg_files "$st")
    check "round $round: format 5, $nl segment(s) listed, $nr retired, no garbage segment or block file left ($g, $gb)" \
      test "$(h5dump -a /format_version "$st" | grep -c '(0): 5')" = 1 -a "$g" = 0 -a "$gb" = 0
    [ "$(find "$st.seg" -regex '.*/[0-9a-f]*-[0-9]*-[1-9][0-9]*\.h5' | grep -c .)" -gt 0 ] && merged=$((merged + 1))
  fi
  rm -rf "$st" "$st.seg"
done
unset DYNSWEEP_STORE_SEGMENTS DYNSWEEP_PUBLISH_FACTOR DYNSWEEP_SEG_CAP DYNSWEEP_BLOCK_ROWS
echo "kills: $kills in $round rounds ($completes completing runs; $midpub kills during a publish," \
     "$replays left journal records to replay; $ckres points resumed from a checkpoint); after the kills: h5dump -H ok $dumps, ls+status" \
     "ok $lists, deep checks ok $deeps; $(( $(date +%s) - t_start )) s"
echo "format-5 rounds: $segrounds ($merged ended with merged segments); $segkills kills of a format-5 store," \
     "$segmid of them during a publish's segment writes (unreferenced segment files left), $mergemid during a merge," \
     "$summid during summary-block writes (unreferenced summary block files left), $blkmid during any block write;" \
     "$aimkills aimed at a new summary block file, $aimsum of them left it unreferenced"
check "at least $KILLS kills ($kills)" test "$kills" -ge "$KILLS"
[ "$HAVE_H5PY" = 1 ] && check "kills landed in format-5 publishes: $segmid during segment writes, $mergemid inside merges" \
  test $((segmid + mergemid)) -gt 0
[ "$HAVE_H5PY" = 1 ] && check "kills landed in format-5 publishes while summary blocks were written: $summid" \
  test "$summid" -gt 0
check "every check after every kill passed ($badkill failures)" test "$badkill" -eq 0
report
