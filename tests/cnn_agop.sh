#!/usr/bin/env bash
# A CNN's AGOP on seed 003's synthetic image task (issue 26; data.kind
# image_rank2, docs/data.md): plan refuses a d_in that is not a square image,
# a CNN on the task gets its 1 x 6 x 6 shape from the data kind, and the AGOP
# over the input pixels aligns with the exact G* = u1 u1' + u2 u2' as the net
# learns (seed 003 Ch. 4: the AGOP of a trained net recovers G*): at lr 6 / lambda0
# the alignment at least doubles in 400 GD steps and ends 0.1 above lr 0.5's.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/tests/sweeps/cnn_agop.yaml
sed 's/d_in: 36,/d_in: 35,/' "$sweep" > "$T/bad.yaml"
plan_refuses "$T/bad.yaml" "d_in 35 is no square image" \
  "data.d_in: data.kind image_rank2 is a 1 x s x s image, so d_in must be a square (25, 36, ...), got 35"
drun 2 "$sweep" -o "$T/a.h5" -q
check "the sweep ran" test -s "$T/a.h5"
"$PY" - "$T/a.h5" > "$T/al.txt" <<'PY' || bad "reading the alignments"
import sys
sys.path.insert(0, __import__("os").environ["DS_SRC"] + "/tools")
from dynsweep_store import Store
s = Store(sys.argv[1])
for i in s.table()["id"]:
    v = s.point_series(int(i))["agop/alignment"][1]
    print("%g" % s.params(int(i))["lr"], " ".join("%.6f" % x for x in v))
PY
cat "$T/al.txt"
read -r _ s0 _ _ _ e0 < <(grep '^0.5 ' "$T/al.txt")
read -r _ s1 _ _ _ e1 < <(grep '^6 ' "$T/al.txt")
check "same start at both lrs ($s0, $s1)" test "$s0" = "$s1"
check "lr 6: the alignment at least doubles ($s1 -> $e1)" awk "BEGIN{exit !($e1 >= 2 * $s1)}"
check "lr 6 ends 0.1 above lr 0.5 ($e1 vs $e0)" awk "BEGIN{exit !($e1 >= $e0 + 0.1)}"
report
