#!/usr/bin/env bash
# issue 13: `--set KEY=VALUE` overrides a sweep's options and grid axes for
# plan, run and submit; the store keeps the sweep text with the overrides, so
# a resume with other (or no) --set is a changed sweep, refused unless it only
# adds grid values.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/sweeps/examples/tanh_map.yaml
npoints() { awk '/^total:/ {print $2}' "$T/out"; }
check "plan: 256 points" bash -c "'$DYNSWEEP' plan '$sweep' > '$T/out' && grep -q '^total: 256 points' '$T/out'"
rc=$(code "$DYNSWEEP" plan "$sweep" --set optimizer.lr_in=0.5)
check "plan --set optimizer.lr_in=0.5: exit 0, the axis is gone: 16 points (rc $rc, $(npoints))" \
  test "$rc" = 0 -a "$(npoints)" = 16
rc=$(code "$DYNSWEEP" plan "$sweep" --set 'grid.optimizer.lr_out=[1, 2, 3]' --set=seed=4)
check "plan --set grid.optimizer.lr_out=[1, 2, 3]: 48 points (rc $rc, $(npoints))" \
  test "$rc" = 0 -a "$(npoints)" = 48
check "the override's values are the axis" grep -qE '^ +2 +0 +1 +3 ' "$T/out"
rc=$(code "$DYNSWEEP" plan "$sweep" --set 'grid.lr={start: 0.1, stop: 1, num: 4}' --set 'grid.width=[4, 8]')
check "plan: a new axis by alias (lr) and width: 2048 points (rc $rc, $(npoints))" \
  test "$rc" = 0 -a "$(npoints)" = 2048
rc=$(code "$DYNSWEEP" plan "$sweep" --set 'grid={}' --set optimizer.lr_out=7)
check "plan --set grid={}: one point (rc $rc, $(npoints))" test "$rc" = 0 -a "$(npoints)" = 1
# bad keys and values: exit 2, one line naming the --set and what is right
rc=$(code "$DYNSWEEP" plan "$sweep" --set optimizer.lr_inn=3)
check "unknown key: exit 2 (got $rc)" test "$rc" = 2
check "unknown key: names the --set and suggests optimizer.lr_in" \
  grep -q "^--set optimizer.lr_inn=3: unknown option 'optimizer.lr_inn' (did you mean 'optimizer.lr_in'?)" "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set 'grid.optimizer.lr_out=[1, -2]')
check "negative lr in a grid override: exit 2 (got $rc)" test "$rc" = 2
check "... says what is allowed and where" grep -q '^--set grid.optimizer.lr_out=\[1, -2\]: optimizer.lr_out: must be >= 0, got -2 (at character 5 of the value)' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set optimizer.lr_in=-1 --set optimizer.lr_in=2 --set lr=3 --set optimizer.lr=4)
check "the later --set of a key (or of the same option) wins (rc $rc, $(npoints) points)" \
  test "$rc" = 0 -a "$(npoints)" = 16
rc=$(code "$DYNSWEEP" plan "$sweep" --set train.steps=5 --set optimizer.lr_in=-1)
check "a bad --set after a good one: named ($(head -c 60 "$T/err"))" \
  grep -q '^--set optimizer.lr_in=-1: optimizer.lr_in: must be >= 0, got -1' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.width)
check "--set without '=': exit 2 (got $rc)" test "$rc" = 2
check "... asks for KEY=VALUE" grep -q 'expected KEY=VALUE' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set optimizer.type=adam)
check "lr_in with adam refused (exit $rc)" test "$rc" = 2
check "... gd and sgd only" grep -q 'per-layer learning rates are supported for optimizer.type gd and sgd only, got adam' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.type=relu)
check "model.gain with a bias-free relu net: the study's sqrt(2) relu(z) (exit $rc)" test "$rc" = 0
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.type=relu --set model.bias=true)
check "model.gain with a relu net with biases refused (exit $rc)" test "$rc" = 2
check "... says why and what would do" grep -q 'use model.bias: false with model.gain, or gain 1' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.type=linear)
check "model.gain with a linear net refused (exit $rc)" test "$rc" = 2
check "... names the net types it applies to" grep -q 'model.gain: applies to tanh nets (tanh(gain z)) and ReLU nets' "$T/err"
# run: the store keeps the overrides; resume rules
ov=(--set 'grid.optimizer.lr_in=[1, 10]' --set 'grid.optimizer.lr_out=[100, 1000]' --set train.steps=50)
drun 2 "$sweep" -o "$T/s.h5" -q "${ov[@]}"
"$DYNSWEEP" ls "$T/s.h5" > "$T/ls.txt"
check "run --set: 4 points" grep -q '^4 points' "$T/ls.txt"
check "run --set: steps override (a finished point ran 50 steps)" grep -qE ' (converged|unconverged) +50 ' "$T/ls.txt"
if [ "$HAVE_H5PY" = 1 ]; then
  "$PY" -c "import h5py, sys; print(h5py.File(sys.argv[1])['sweep/yaml'][()].decode(), end='')" "$T/s.h5" > "$T/kept.yaml"
  check "the stored sweep ends with the overrides" \
    bash -c "tail -4 '$T/kept.yaml' | tr -d '\n' | grep -q \"^overrides:  # dynsweep --set  grid.optimizer.lr_in: \[1, 10\]  grid.optimizer.lr_out: \[100, 1000\]  train.steps: 50\$\""
  # the stored text is a sweep: the same hash as file + --set, and it takes no further --set
  h1=$("$DYNSWEEP" plan "$sweep" "${ov[@]}" | awk 'NR==1 {print $NF}')
  h2=$("$DYNSWEEP" plan "$T/kept.yaml" | awk 'NR==1 {print $NF}')
  check "stored sweep has the hash of the file with --set ($h1 = $h2)" test "$h1" = "$h2"
  rc=$(code "$DYNSWEEP" plan "$T/kept.yaml" --set seed=3)
  check "a sweep with overrides: takes no --set (exit $rc)" test "$rc" = 2
  check "... with the line of its overrides:" grep -qE "kept.yaml:[0-9]+: the sweep already has an overrides: map" "$T/err"
fi
rc=$(code drun 2 "$sweep" -o "$T/s.h5" -q "${ov[@]}")
check "resume with the same --set: exit 0 (got $rc)" test "$rc" = 0
rc=$(code drun 2 "$sweep" -o "$T/s.h5" -q)
check "resume without the --set: refused, exit 2 (got $rc)" test "$rc" = 2
check "... as a different sweep" grep -q 'made by a different sweep' "$T/err"
rc=$(code drun 2 "$sweep" -o "$T/s.h5" -q "${ov[@]}" --set train.steps=60)
check "resume with another --set value (the later --set of a key wins): refused, exit 2 (got $rc)" \
  test "$rc" = 2
check "... as a different sweep" grep -q 'made by a different sweep' "$T/err"
rc=$(code drun 2 "$sweep" -o "$T/s.h5" -q --set 'grid.optimizer.lr_in=[1, 10, 30]' "${ov[@]:2}")
check "resume adding grid values by --set: exit 0 (got $rc)" test "$rc" = 0
check "... 6 points" bash -c "'$DYNSWEEP' ls '$T/s.h5' | grep -q '^6 points'"
# submit checks the overrides and passes them on to 'dynsweep run'
rc=$(code "$DYNSWEEP" submit "$sweep" -o "$T/j.h5" --dry-run "${ov[@]}")
check "submit --dry-run --set: exit 0 (got $rc)" test "$rc" = 0
check "the job script passes the --set on" grep -qF "DS_RUN_ARGS=('--set' 'grid.optimizer.lr_in=[1, 10]' '--set' 'grid.optimizer.lr_out=[100, 1000]' '--set' 'train.steps=50')" "$T/j.h5.sbatch"
rc=$(code "$DYNSWEEP" submit "$sweep" -o "$T/j2.h5" --dry-run --set train.steps=0)
check "submit with a bad --set: exit 2, no script (got $rc)" test "$rc" = 2 -a ! -e "$T/j2.h5.sbatch"
report
