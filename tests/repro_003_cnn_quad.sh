#!/usr/bin/env bash
# ctest repro_003_cnn_quad: the reduced form of seed 003's Chapter 3 claim for a
# 2-layer CNN (sweeps/repro/003_cnn_quad.yaml, docs/repro/003_cnn_quad.md):
# f, f_quad (model.approx quad) and f_lin (lin) by GD from the same weights,
# loss 1/2 sum (f - y)^2, lr in units of lambda_0 (eta_crit = 2/lambda_0).
# Reduced: 8 channels, 64 training and 64 test images, 60 steps, eta = 0.5
# and 1.3 eta_crit. tools/repro_003_cnn_quad.py check --reduced asserts: below
# eta_crit the three are monotone and their losses agree with f's (max
# relative gap: f_quad < 0.10, f_lin < 0.25); above it f_lin diverges while f and f_quad catapult (the loss rises
# above its start, then ends below it) and reach a lower best test loss than
# below eta_crit.
source "$(dirname "$0")/lib.sh"
if [ "$HAVE_H5PY" != 1 ]; then echo "SKIP: needs /usr/bin/python3 with h5py and numpy"; exit 0; fi
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "SKIP: Fashion-MNIST not installed (dataset-fashion-mnist)"; exit 0; }
sed -e 's/^  width: 16 .*/  width: 8/' -e 's/^  n_train: 128$/  n_train: 64/' \
  -e 's/^  n_test: 256$/  n_test: 64/' -e 's/^train: {steps: 200,/train: {steps: 60,/' \
  -e 's/^  lr: \[.*/  lr: [1.0, 2.6]/' -e 's/^name: repro-003-cnn-quad$/name: repro-003-cnn-quad-reduced/' \
  "$DS_SRC/sweeps/repro/003_cnn_quad.yaml" >"$T/q.yaml"
[ "$(grep -cE '^  width: 8$|^  n_train: 64$|^  n_test: 64$|steps: 60,|^  lr: \[1.0, 2.6\]$|reduced$' "$T/q.yaml")" = 6 ] ||
  bad "003_cnn_quad.yaml: sed did not change all 6 lines"
start=$(date +%s%N)
if drun 3 "$T/q.yaml" -o "$T/q.h5" >"$T/q.log" 2>&1; then
  ok "reduced 003_cnn_quad sweep ran ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
else
  bad "reduced 003_cnn_quad sweep failed"; cat "$T/q.log" >&2
fi
check "003 Ch. 3 (2-layer CNN): f, f_quad, f_lin agree below eta_crit; above, f_lin diverges, f and f_quad catapult" \
  "$PY" "$DS_SRC/tools/repro_003_cnn_quad.py" check --store "$T/q.h5" --reduced
report
