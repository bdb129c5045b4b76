#!/usr/bin/env bash
# Bit rot (issue 11, item 4): corruption is detected, never resumed from.
# Real files, real flipped bytes (offsets from h5py's chunk info):
# - `dynsweep verify` passes a clean store (and an old format-2 one, saying it
#   has no checksums) and flags damaged series, summary and string data, naming
#   the points; readers fail with a clear message instead of wrong data;
# - the campaign: one bit flipped at a time at deterministic offsets over every
#   region of a finished store (tests/corrupt_campaign.py): verify flags every
#   flip that changes anything, no reader silently returns different data;
# - a bit flipped in a checkpoint (in the file, or in the blob itself before it
#   reached the store) is not resumed from: a warning naming the point, a
#   restart from step 0, a trajectory bitwise equal to an uninterrupted run;
# - a torn and a foreign journal are reported with what is dropped/recomputed.
. "$(dirname "$0")/lib.sh"
unset OPENBLAS_CORETYPE DYNSWEEP_NO_REEXEC
export OPENBLAS_NUM_THREADS=1 HDF5_USE_FILE_LOCKING=FALSE
small=$DS_SRC/tests/sweeps/small.yaml
D=$DYNSWEEP

# flip FILE OFFSET [BIT]: xor one bit of the byte at OFFSET
flip() { "$PY" -c "
import sys
p, o, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(p, 'r+b') as f:
    f.seek(o); x = f.read(1)[0]; f.seek(o); f.write(bytes([x ^ (1 << b)]))" "$1" "$2" "${3:-0}"; }
# chunk_off FILE DATASET [CHUNK]: file offset of the middle of a chunk (of
# the data of a contiguous dataset)
chunk_off() { "$PY" -c "
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    d = f[sys.argv[2]].id
    if f[sys.argv[2]].chunks:
        ci = d.get_chunk_info(int(sys.argv[3]))
        print(ci.byte_offset + ci.size // 2)
    else:
        print(d.get_offset() + d.get_storage_size() // 2)" "$1" "$2" "${3:-0}"; }

# ---- a clean store; an old one ---------------------------------------------------
drun 2 "$small" -o "$T/s.h5" -q
check "verify: clean store, exit 0" test "$(code "$D" verify "$T/s.h5")" -eq 0
# the space a publish reserves (fallocate KEEP_SIZE) is given back: the blocks
# on disk are the file's size, not the reservation (before: 1132 kB for 602 kB)
alloc=$(( $(stat -c %b "$T/s.h5") * $(stat -c %B "$T/s.h5") )); size=$(stat -c %s "$T/s.h5")
check "the published store holds no reserved blocks past its end ($alloc bytes on disk for $size)" \
  test "$alloc" -le $(( size + 65536 ))
check "... says OK with checksums" grep -q "OK: 32 points.*all checksums and digests match" "$T/out"
check "store is format 4 with Fletcher32 on the results" bash -c "h5dump -pH '$T/s.h5' |
  grep -c FLETCHER32 | grep -qx 5"
check "verify --help documents the exit codes" bash -c "'$D' verify --help | grep -q '1 damaged'"
cp "$DS_SRC/tests/data/store_v2.h5" "$T/v2.h5"
check "verify: format-2 store, exit 0" test "$(code "$D" verify "$T/v2.h5")" -eq 0
check "... notes it has no checksums" grep -q "format_version 2 has no checksums" "$T/out"
check "verify: not a store, exit 2" test "$(code "$D" verify "$small")" -eq 2

# ---- targeted flips ----------------------------------------------------------------
cp "$T/s.h5" "$T/val.h5"; flip "$T/val.h5" "$(chunk_off "$T/val.h5" series/value 1)" 3
check "value chunk flipped: verify exit 1" test "$(code "$D" verify "$T/val.h5")" -eq 1
check "... names damaged points' series" grep -qE "^damaged: point [0-9]+: [0-9]+ of its series cannot be read.*Fletcher32" "$T/out"
pt=$(sed -nE 's/^damaged: point ([0-9]+): .*/\1/p' "$T/out" | head -1)
check "... final line lists the points" grep -qE "DAMAGED: .* point\(s\) affected: .*\b$pt\b" "$T/out"
check "show of damaged point $pt: exit 1" test "$(code "$D" show "$T/val.h5" "$pt")" -eq 1
check "... says point, damage and verify" grep -q "point $pt: cannot read its series .*damaged.*bit rot.*dynsweep verify" "$T/err"
check "ls still works (the summary is intact)" test "$(code "$D" ls "$T/val.h5")" -eq 0

cp "$T/s.h5" "$T/sum.h5"; flip "$T/sum.h5" "$(chunk_off "$T/sum.h5" summary 0)" 5
check "summary chunk flipped: verify exit 1" test "$(code "$D" verify "$T/sum.h5")" -eq 1
check "... names the summary rows" grep -q "^damaged: /summary rows 0-31 cannot be read" "$T/out"
check "ls: exit 1, clear message" test "$(code "$D" ls "$T/sum.h5")" -eq 1
check "... checksum named" grep -q "damaged.*checksum" "$T/err"

# the sweep text lives in HDF5's global heap (no checksum): the digest catches it
off=$("$PY" -c "import sys; d=open(sys.argv[1],'rb').read(); print(d.index(b'per_decade: 5'))" "$T/s.h5")
cp "$T/s.h5" "$T/yaml.h5"; flip "$T/yaml.h5" "$off" 1
check "sweep text flipped: verify exit 1" test "$(code "$D" verify "$T/yaml.h5")" -eq 1
check "... its digest named" grep -q "^damaged: /sweep/yaml (the sweep file) fail their CRC-32 digest" "$T/out"
check "status: exit 1, clear message" test "$(code "$D" status "$T/yaml.h5")" -eq 1
check "... digest named" grep -q "fail their CRC-32 digest (bit rot?)" "$T/err"
check "resume refuses it (exit 1)" test "$(code drun 1 "$small" -o "$T/yaml.h5")" -eq 1

# ---- the campaign -------------------------------------------------------------------
rc=0
# 4 flips per region (2 in the sanitizer pass, tests/sanitize.sh: the same
# reader paths, each ~3x slower there: verify took 127 CPU-seconds under
# ASan, 46 without)
per=4
[ "${DS_SANITIZE_PASS:-0}" = 1 ] && per=2
"$PY" "$DS_SRC/tests/corrupt_campaign.py" "$D" "$T/s.h5" --per-region "$per" >"$T/campaign.txt" 2>&1 || rc=$?
sed -n '/^region/,$p' "$T/campaign.txt"
check "campaign: every flip detected or harmless, no reader silently wrong" test "$rc" -eq 0 ||
  grep -E "MISSED|SILENTLY" "$T/campaign.txt" >&2

# resumed NAME WARNING: `run` on $T/NAME.h5 (stderr in $T/NAME.log) exits 0,
# warns (grep pattern WARNING) and ends with the uninterrupted run's trajectory
resumed() {
  local rc=0
  drun 2 "$one" -o "$T/$1.h5" -q 2>"$T/$1.log" || rc=$?
  check "$1: resume exit 0" test "$rc" -eq 0
  check "... warns: $2" grep -q "$2" "$T/$1.log"
  check "... trajectory equals the uninterrupted run's" same_points "$T/ref.h5" "$T/$1.h5"
}

# ---- checkpoints ---------------------------------------------------------------------
# one long point (~2 s of this host, long_sweep): a reference run, and a run
# drained mid-point so the store keeps its checkpoint
long_sweep
one=$T/one.yaml
sed -e 's/^  model.type: \[linear, relu\]$/  model.type: [linear]/' -e 's/^  lr: \[0.01, 0.02\]$/  lr: [0.01]/' \
  "$T/long.yaml" >"$one"
grep -q '^  lr: \[0.01\]$' "$one" || bad "one.yaml: sed changed nothing"
drun 2 "$one" -o "$T/ref.h5" -q
drain_run "$T/c.h5" 0.8 "$T/c1.log" -n 2 "$D" run "$one" -o "$T/c.h5" --checkpoint-every 0.2
nck=$(h5ls "$T/c.h5/checkpoints" 2>/dev/null | wc -l)
check "drained with a checkpoint (exit $RC, $nck checkpoint)" test "$RC" -eq 3 -a "$nck" -eq 1
check "verify: drained store clean" test "$(code "$D" verify "$T/c.h5")" -eq 0
# (a) a bit flipped in the file: Fletcher32 and the checkpoint's crc32 catch it
cp "$T/c.h5" "$T/ca.h5"; flip "$T/ca.h5" "$(chunk_off "$T/ca.h5" checkpoints/000000 0)" 2
check "checkpoint flipped in the file: verify exit 1" test "$(code "$D" verify "$T/ca.h5")" -eq 1
check "... names point 0's checkpoint" grep -q "^damaged: point 0: cannot read its checkpoint" "$T/out"
resumed ca "not resuming from it, point 0 restarts from step 0"
check "... verify clean afterwards" test "$(code "$D" verify "$T/ca.h5")" -eq 0
# (b) the blob itself damaged (before it reached the store: Fletcher32 and the
# store's crc32 are recomputed): the worker's CRC-32 catches it
cp "$T/c.h5" "$T/cb.h5"
"$PY" - "$T/cb.h5" <<'EOF'
import sys, zlib, h5py
with h5py.File(sys.argv[1], "r+") as f:
    d = f["checkpoints/000000"]
    b = bytearray(d[...].tobytes()); b[len(b) // 3] ^= 0x10
    d[...] = list(b)
    d.attrs["crc32"] = zlib.crc32(bytes(b))
EOF
check "blob flipped, file checksums redone: verify passes (store-level checks agree)" \
  test "$(code "$D" verify "$T/cb.h5")" -eq 0
resumed cb "point 0: its checkpoint .* CRC-32 does not match.*restarts from step 0"
# (c) intact: resumes from it, same result
cp "$T/c.h5" "$T/cc.h5"
drun 2 "$one" -o "$T/cc.h5" -v 2>"$T/cc.log"
check "intact checkpoint: resumed from it" grep -q "(1 from a checkpoint)" "$T/cc.log"
check "... no warning" bash -c "! grep -q 'restarts from step 0' '$T/cc.log'"
check "... trajectory equals the uninterrupted run's" same_points "$T/ref.h5" "$T/cc.h5"

# ---- journals -------------------------------------------------------------------------
# a run killed mid-point leaves journaled checkpoints that were not published
start_bg "$T/k.log" -n 2 "$D" run "$one" -o "$T/k.h5" --checkpoint-every 0.1 --publish-every 1000
while bg_running && [ ! -e "$T/k.h5.journal" ]; do sleep 0.01; done
sleep 0.8; kill_session "$SID"; wait_bg
jsz=$(stat -c %s "$T/k.h5.journal" 2>/dev/null || echo 0)
check "killed run left journal records ($jsz bytes)" test "$jsz" -gt 200
cp "$T/k.h5" "$T/j.h5"; cp "$T/k.h5.journal" "$T/j.h5.journal"
truncate -s $((jsz - 7)) "$T/j.h5.journal"
check "verify: torn journal is a warning, store clean (exit 0)" test "$(code "$D" verify "$T/j.h5")" -eq 0
check "... warning names the torn bytes" grep -q "^warning: .*j.h5.journal: [0-9]* bytes from byte [0-9]* are torn" "$T/out"
resumed j "j.h5.journal is torn at byte [0-9]*: a checkpoint record of point 0 (cut short.*what it recorded is recomputed"
# a foreign journal: another store's, copied next to this one
cp "$T/c.h5" "$T/f.h5"; cp "$T/k.h5.journal" "$T/f.h5.journal"
check "verify: foreign journal is a warning" test "$(code "$D" verify "$T/f.h5")" -eq 0
check "... says it belongs to another store" grep -q "^warning: .*f.h5.journal belongs to another store" "$T/out"
resumed f "ignoring .*f.h5.journal (it belongs to another store): its [0-9]* record(s), of points 0.* are not applied; kept as .*f.h5.journal.ignored"
check "... the copy is kept" test -s "$T/f.h5.journal.ignored"
# ---- format 5: segment files (docs/store.md, "Segments") -----------------------------
# A VDS whose source file is missing reads fill values without an error: the
# readers check every segment at open. Many publishes, a small merge cap.
seg_env=(env DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_PUBLISH_FACTOR=0 DYNSWEEP_SEG_CAP=60000)
"${seg_env[@]}" mpirun --oversubscribe -n 2 "$D" run "$small" -o "$T/v5.h5" -q --publish-every 0.01
nseg=$(ls "$T/v5.h5.seg" | grep -cE '^[0-9a-f]{16}-[0-9]+-[0-9]+\.h5$') # segments, not row blocks
check "format 5: store written with $nseg segment file(s) (>= 2)" test "$nseg" -ge 2
check "format 5: verify passes (exit 0)" test "$(code "$D" verify "$T/v5.h5")" -eq 0
check "format 5: the same points as format 4, bit for bit" same_points "$T/s.h5" "$T/v5.h5"
# readers while a format-5 sweep publishes (and merges) every 0.05 s: ls and
# the h5py reader never fail, and every finished point is complete
start_bg "$T/live.log" -n 3 env DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_PUBLISH_FACTOR=0 DYNSWEEP_SEG_CAP=60000 \
  "$D" run "$DS_SRC/tests/sweeps/durability.yaml" -o "$T/live.h5" -q --publish-every 0.05
# (a reader that read a version the publish after next deleted is told to
# "open the store again", docs/store.md "Blocks", and does so once;
# store_check.py does the same for dynsweep.store.StoreMoved)
live_ok=0 live_bad=0 live_again=0
live_ls() { "$D" ls "$T/live.h5" >/dev/null 2>"$T/live.last"; local rc=$?; cat "$T/live.last" >>"$T/live.err"; return $rc; }
while bg_running; do
  [ -e "$T/live.h5" ] || { sleep 0.05; continue; }
  if live_ls || { grep -q 'open the store again' "$T/live.last" && live_again=$((live_again + 1)) && live_ls; }; then
    if deep_check "$T/live.h5" >>"$T/live.err" 2>&1; then live_ok=$((live_ok + 1)); else live_bad=$((live_bad + 1)); fi
  else live_bad=$((live_bad + 1)); fi
done
echo "format 5 live readers: $live_ok ok, $live_bad failed, $live_again opened the store again"
wait_bg
check "format 5: readers during the run: $live_ok reads ok, $live_bad failed (run exit $RC)" \
  test "$live_bad" = 0 -a "$RC" = 0 -a "$live_ok" -ge 1
[ "$live_bad" = 0 ] || tail -5 "$T/live.err" >&2
mkdir -p "$T/moved" && cp -r "$T/v5.h5" "$T/v5.h5.seg" "$T/moved/"
check "format 5: a copy of STORE + STORE.seg/ elsewhere verifies, from another cwd" \
  bash -c "cd / && '$D' verify '$T/moved/v5.h5' >/dev/null"
check "... h5dump reads /series/value through the VDS from another cwd" \
  bash -c "cd / && h5dump -d /series/value -c 2 '$T/moved/v5.h5' | grep -q '(0): [0-9]'"
check "... h5py reads every point equal to the original" same_points "$T/s.h5" "$T/moved/v5.h5"
seg1=$("$PY" "$DS_SRC/tests/seg_files.py" --listed "$T/moved/v5.h5" | tail -1)
mv "$T/moved/v5.h5.seg/$seg1" "$T/moved/$seg1"
check "missing segment: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... naming the segment and saying it is missing" grep -q "segment [0-9]* of .*$seg1: No such file" "$T/out"
check "... ls exits 1" test "$(code "$D" ls "$T/moved/v5.h5")" -eq 1
check "... show exits 1, naming the segment" bash -c "[ \$(cd / && '$D' show '$T/moved/v5.h5' 0 >/dev/null 2>'$T/err'; echo \$?) = 1 ] && grep -q 'is missing or damaged' '$T/err'"
check "... the h5py reader (dynsweep.store) refuses too" bash -c "! '$PY' '$DS_SRC/tests/store_check.py' '$T/moved/v5.h5' >'$T/out' 2>&1 && grep -q 'StoreError: .*is missing or damaged' '$T/out'"
# a foreign segment under the right name: another format-5 store's
"${seg_env[@]}" mpirun --oversubscribe -n 1 "$D" run "$small" -o "$T/w5.h5" -q --publish-every 0.01
cp "$T/w5.h5.seg/$("$PY" "$DS_SRC/tests/seg_files.py" --listed "$T/w5.h5" | head -1)" "$T/moved/v5.h5.seg/$seg1"
check "foreign segment: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... saying what was found and what was expected" grep -q "found format \"dynsweep-segment\", store [0-9a-f]*.*expected a dynsweep-segment of store" "$T/out"
check "... the h5py reader refuses too" bash -c "! '$PY' '$DS_SRC/tests/store_check.py' '$T/moved/v5.h5' >/dev/null 2>&1"
mv "$T/moved/$seg1" "$T/moved/v5.h5.seg/$seg1"
check "segment back: verify passes" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 0
# /summary, /series/index and /grid/axis_values are VDS over block files
# (blocks.c): h5dump and h5py read them; a deleted or truncated summary block
# is a loud error (verify exit 1 naming the file, h5py StoreError), never
# fill values
check "format 5: /summary is a VDS over block files" \
  "$PY" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); assert f['summary'].is_virtual and f['series/index'].is_virtual and f['grid/axis_values'].is_virtual; assert len(f['summary'][...]) == f['summary'].shape[0] > 0" "$T/moved/v5.h5"
check "... h5dump -d /summary reads it (from another cwd)" \
  bash -c "cd / && h5dump -d /summary '$T/moved/v5.h5' | grep -q '\"status_names\"' && h5dump -d /summary -c 1 '$T/moved/v5.h5' | grep -q '(0): {'"
check "... h5py (dynsweep.store) reads the summary equal to the format-4 store's ids and status" \
  "$PY" -c "import sys; sys.path.insert(0, sys.argv[3]); import dynsweep.store as d; a = d.Store(sys.argv[1]).summary; b = d.Store(sys.argv[2]).summary; assert (a['id'] == b['id']).all() and (a['status'] == b['status']).all()" "$T/moved/v5.h5" "$T/s.h5" "$DS_SRC/python"
sum1=$("$PY" -c "import h5py, sys; print(h5py.File(sys.argv[1], 'r')['summary'].virtual_sources()[0].file_name.split('/')[-1])" "$T/moved/v5.h5")
check "... it maps a summary block file ($sum1)" test -n "$sum1" -a -e "$T/moved/v5.h5.seg/$sum1"
mv "$T/moved/v5.h5.seg/$sum1" "$T/moved/$sum1"
check "deleted summary block: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... naming the block file and saying it is missing" grep -q "block [0-9]* of [0-9]* of /summary .*$sum1: No such file" "$T/out"
check "... ls exits 1" test "$(code "$D" ls "$T/moved/v5.h5")" -eq 1
check "... h5py (dynsweep.store) refuses, naming the file" \
  bash -c "! '$PY' -c 'import sys; sys.path.insert(0, sys.argv[2]); import dynsweep.store as d; d.Store(sys.argv[1])' '$T/moved/v5.h5' '$DS_SRC/python' >'$T/out' 2>&1 && grep -q 'StoreError: .*$sum1' '$T/out'"
cp "$T/moved/$sum1" "$T/moved/v5.h5.seg/$sum1"
truncate -s 1500 "$T/moved/v5.h5.seg/$sum1"
check "truncated summary block: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... naming the block file" grep -q "of /summary .*$sum1: cannot open it as HDF5" "$T/out"
check "... h5py (dynsweep.store) refuses, naming the file" \
  bash -c "! '$PY' -c 'import sys; sys.path.insert(0, sys.argv[2]); import dynsweep.store as d; d.Store(sys.argv[1])' '$T/moved/v5.h5' '$DS_SRC/python' >'$T/out' 2>&1 && grep -q 'StoreError: .*$sum1' '$T/out'"
mv "$T/moved/$sum1" "$T/moved/v5.h5.seg/$sum1"
check "summary block back: verify passes" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 0
cp "$T/moved/v5.h5.seg/$sum1" "$T/sum1.bak"
flip "$T/moved/v5.h5.seg/$sum1" "$(chunk_off "$T/moved/v5.h5.seg/$sum1" rows 0)" 3
check "flipped bit in a summary block: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... naming the summary rows of the block and the checksum" grep -q "^damaged: /summary rows 0-[0-9]* cannot be read: .*Fletcher32" "$T/out"
cp "$T/sum1.bak" "$T/moved/v5.h5.seg/$sum1"
# the campaign over a segment file (2 flips per region: superblock, step and
# value chunks, global heap, metadata of the largest segment)
rc=0
"$PY" "$DS_SRC/tests/corrupt_campaign.py" "$D" "$T/v5.h5" --per-region "$((per / 2))" --segment >"$T/campaign5.txt" 2>&1 || rc=$?
sed -n '/^region/,$p' "$T/campaign5.txt"
check "segment campaign: every flip detected or harmless, no reader silently wrong" test "$rc" -eq 0 ||
  grep -E "MISSED|SILENTLY" "$T/campaign5.txt" >&2
# a flipped bit in a segment's /value chunk: Fletcher32, through the VDS
big=$("$PY" "$DS_SRC/tests/seg_files.py" --listed "$T/moved/v5.h5" | head -1)
flip "$T/moved/v5.h5.seg/$big" "$(chunk_off "$T/moved/v5.h5.seg/$big" value 0)" 3
check "damaged segment chunk: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... naming the points and the checksum" grep -q "^damaged: point.*Fletcher32" "$T/out"
check "... h5py fails on it (no silent data)" bash -c "! '$PY' '$DS_SRC/tests/store_check.py' '$T/moved/v5.h5' >/dev/null 2>&1"
truncate -s 2000 "$T/moved/v5.h5.seg/$big"
check "truncated segment: verify exits 1" test "$(code "$D" verify "$T/moved/v5.h5")" -eq 1
check "... cannot open it as HDF5" grep -q "cannot open it as HDF5" "$T/out"
# ---- the layout follows the plan: a store estimated at >= 256 MB gets
# segments (format 5), a smaller one stays one file (format 4); the
# environment's DYNSWEEP_STORE_SEGMENTS=0/1 overrides. The big sweep (400
# points of 1.28 MB: 512 MB planned) is drained as soon as its store exists.
sed 's/^name: .*/name: layout/' "$DS_SRC/bench/sweeps/long_series.yaml" > "$T/big.yaml"
fmt() { h5dump -a format_version "$1" 2>/dev/null | sed -n 's/.*(0): \([0-9]*\).*/\1/p'; }
layout_run() { # STORE [env...]: start, drain once STORE exists; the exit code in RC
  rm -rf "$1" "$1".*
  start_bg "$T/layout.log" -n 2 env "${@:2}" "$D" run "$T/big.yaml" -o "$1" -q
  for i in $(seq 1 600); do [ -e "$1" ] && break; bg_running || break; sleep 0.05; done
  kill -USR1 "$SID" 2>/dev/null || true
  for i in $(seq 1 600); do bg_running || break; sleep 0.1; done
  bg_running && kill_session "$SID"
  wait_bg
}
check "plan says a 512 MB store gets segment files" bash -c "'$D' plan '$T/big.yaml' | grep -q 'store about 512 MB (STORE plus segment files in STORE.seg/)'"
layout_run "$T/auto.h5"
check "512 MB planned: format $(fmt "$T/auto.h5") with STORE.seg/ (drained, exit $RC)" \
  bash -c "[ '$(fmt "$T/auto.h5")' = 5 ] && [ -d '$T/auto.h5.seg' ] && [ $RC = 3 ]"
check "... and it verifies" "$D" verify "$T/auto.h5"
layout_run "$T/off.h5" DYNSWEEP_STORE_SEGMENTS=0
check "... DYNSWEEP_STORE_SEGMENTS=0: one file, format $(fmt "$T/off.h5")" \
  bash -c "[ '$(fmt "$T/off.h5")' = 4 ] && [ ! -e '$T/off.h5.seg' ]"
rm -rf "$T/small5.h5"*
drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/small5.h5" -q
check "a small sweep stays one file (format $(fmt "$T/small5.h5"))" \
  bash -c "[ '$(fmt "$T/small5.h5")' = 4 ] && [ ! -e '$T/small5.h5.seg' ]"
report
