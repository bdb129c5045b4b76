#!/usr/bin/env bash
# terminal.sh -- issue 24, item 6: what the terminal says.
#  - a changed sweep file on an existing store names the changed keys with
#    their old and new values;
#  - `dynsweep stat` suggests `status`;
#  - `show` names every grid axis of the point (model.type too), and an
#    unknown --series lists the series that exist;
#  - with the documented `mpirun -q` (tools/demo.sh's flags) a drain (exit 3)
#    and a refused input (exit 2) end with rank 0's message, no Open MPI banner.
. "$(dirname "$0")/lib.sh"
demo=$DS_SRC/sweeps/demo.yaml
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$demo" -o "$T/d.h5" -q --set train.steps=200)
check "a short demo run exits 0 (rc $rc)" test "$rc" -eq 0
rc=$(code "$DYNSWEEP" run "$demo" -o "$T/d.h5" --set train.steps=300 --set optimizer.lr_units=lambda0)
check "a changed sweep on the store is refused (exit $rc)" test "$rc" -eq 2
check "... naming the changed keys with old and new values" \
  bash -c "grep -q 'train.steps 200 -> 300' '$T/err' && grep -q 'optimizer.lr_units absolute -> lambda0' '$T/err'"
rc=$(code "$DYNSWEEP" run "$demo" -o "$T/d.h5" --set train.steps=200 --set 'grid.lr=[0.02, 0.5, 1]')
check "a grid value gone: named as written (exit $rc)" \
  bash -c "[ $rc = 2 ] && grep -q 'grid value 0.005 of axis lr (point 0) is gone' '$T/err'"
rc=$(code "$DYNSWEEP" run "$demo" -o "$T/d.h5" --set train.steps=200 --set model.bias=true)
check "a changed model.bias: 'model.bias false -> true' (exit $rc)" \
  bash -c "[ $rc = 2 ] && grep -q 'model.bias false -> true changed' '$T/err'"
rc=$(code "$DYNSWEEP" stat "$T/d.h5")
check "dynsweep stat: exit 2, did you mean 'status'" bash -c "[ $rc = 2 ] && grep -q \"unknown command 'stat' (did you mean 'status'?)\" '$T/err'"
"$DYNSWEEP" show "$T/d.h5" 15 >"$T/show" 2>&1 || true
check "show names every grid axis, model.type by name" \
  grep -q '^# point 15 replica 0 model.type relu width 16 depth 4 init_scale 1 lr 0.005:' "$T/show"
rc=$(code "$DYNSWEEP" show "$T/d.h5" 0 --series nosuch)
check "show --series nosuch: exit 2, lists the series that exist" \
  bash -c "[ $rc = 2 ] && grep -q \"has no series 'nosuch'; it has: loss, test_loss, grad_norm\" '$T/err'"
# -q, as tools/setup.sh's ds_mpirun_flags gives it (tools/demo.sh, README)
flags=$(bash -c ". '$DS_SRC/tools/setup.sh' >/dev/null 2>&1; ds_mpirun_flags")
check "the documented mpirun flags include -q ($flags)" bash -c "[[ ' $flags ' == *' -q '* ]]"
rc=$(code mpirun -q --oversubscribe -n 2 "$DYNSWEEP" run "$demo" -o "$T/x.h5" --set model.width=abc)
check "a refused input under mpirun -q: exit 2, rank 0's message is the last line" \
  bash -c "[ $rc = 2 ] && tail -n 1 '$T/err' | grep -q '^dynsweep: --set model.width=abc'"
start_bg "$T/dr.log" -q -n 3 "$DYNSWEEP" run "$demo" -o "$T/dr.h5" --set train.steps=200000
for _ in $(seq 1 200); do grep -q "resuming\|points on 3 rank" "$T/dr.log" 2>/dev/null && [ -e "$T/dr.h5" ] && break; sleep 0.05; done
sleep 0.5
kill -USR1 "$SID" 2>/dev/null || true
wait_bg
check "a drain under mpirun -q: exit 3, rank 0's message is the last line" \
  bash -c "[ $RC = 3 ] && tail -n 1 '$T/dr.log' | grep -q '^dynsweep: drained: '"
report
