#!/usr/bin/env bash
# cnn_quad_sweep.sh -- issue 26: model.approx quad on CNN points, end to end.
# tests/sweeps/cnn_diag.yaml without its spectra (a 2-conv-layer CNN on 4 x 4
# images of the rank-2 task; GD and SGD points): plan takes approx quad for a
# CNN, `dynsweep models` no longer lists it as refused, and point 0's train
# and test losses over 40 GD steps equal PyTorch float64's f_quad replay
# (cnn_quad_sweep.py: functorch jvp of jvp, 1e-10 relative), on one rank and
# on teams of 2 (samples split).
# Skips (77) without h5py or torch.
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import h5py, numpy, torch, functorch' 2>/dev/null || { echo "skip: no h5py/numpy/torch"; exit 77; }
DUMP=$DS_BUILD/tests/cnn_sweep_dump
sed '/^  spectra:/,/^    split/d' "$DS_SRC/tests/sweeps/cnn_diag.yaml" >"$T/quad.yaml"
rc=$(code "$DYNSWEEP" plan "$T/quad.yaml" --set model.approx=quad)
check "plan takes model.approx quad on a CNN (exit $rc)" test "$rc" = 0
check "dynsweep models no longer refuses approx quad for CNNs" \
  bash -c "! '$DYNSWEEP' models | grep -q 'cnn with model.approx quad'"
drun 1 "$T/quad.yaml" -o "$T/quad.h5" -q --set model.approx=quad --set train.steps=40
check "model.approx quad: every loss equals PyTorch float64's f_quad GD replay to 1e-10" \
  "$PY" "$DS_SRC/tests/cnn_quad_sweep.py" "$DUMP" "$T/quad.yaml" "$T/quad.h5"
# on teams of 2 the samples split over the members (point.c cnn_block_loss):
# the f_quad model, not the net, on each block
drun 3 "$T/quad.yaml" -o "$T/quad2.h5" -q --set model.approx=quad --set train.steps=40 \
  --set train.ranks_per_point=2
check "model.approx quad on teams of 2: every loss = PyTorch float64's f_quad replay to 1e-10" \
  "$PY" "$DS_SRC/tests/cnn_quad_sweep.py" "$DUMP" "$T/quad.yaml" "$T/quad2.h5"
report
