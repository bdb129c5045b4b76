#!/usr/bin/env bash
# cnn_sweep.sh -- issue 26 step 3: CNNs trained from a sweep, end to end.
# sweeps/examples/cnn_fashion.yaml (2 conv layers of 2 or 4 channels x 2
# learning rates, 32 + 32 Fashion-MNIST T-shirts/trousers, 30 GD steps):
#   - mpirun -n 2 and -n 1 give the same store (every series bit for bit);
#   - its loss and test_loss at every step equal PyTorch float64's replay of
#     the same GD from the same weights and data (cnn_sweep.py, 1e-12 rel.);
#   - SGD with momentum (batch 8) drained with SIGUSR1 mid-point resumes from
#     its checkpoints and equals an uninterrupted run bit for bit;
#   - plan refuses what CNN points do not take, with its reason (the
#     diagnostics they take: tests/cnn_diag.sh), and layer lists that do not
#     fit their input (naming the layer);
#   - tf_mnist with dropout 0.5: -n 2 = -n 1 bit for bit, != no dropout;
#     a drained momentum/minibatch sweep with dropout resumes bit for bit.
# Skips (77) without dataset-fashion-mnist, h5py or torch.
. "$(dirname "$0")/lib.sh"
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "skip: Fashion-MNIST not installed (package dataset-fashion-mnist)"; exit 77; }
"$PY" -c 'import h5py, numpy, torch' 2>/dev/null || { echo "skip: no h5py/numpy/torch"; exit 77; }
sweep=$DS_SRC/sweeps/examples/cnn_fashion.yaml
DUMP=$DS_BUILD/tests/cnn_sweep_dump

# ---- plan: what a CNN point does not take -------------------------------------
refuses() { plan_refuses "$sweep" "$@"; } # refuses WHAT MESSAGE --set ... (lib.sh)
rc=$(code "$DYNSWEEP" plan "$sweep")
check "plan takes the example CNN sweep (exit $rc)" test "$rc" = 0
rc=$(code "$DYNSWEEP" plan "$sweep" --set record.spectra.hessian_full.every=10)
check "plan takes the full Hessian spectrum of a CNN (P HVP columns, hessian.c; exit $rc)" test "$rc" = 0
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.approx=quad)
check "plan takes model.approx quad on a CNN (f_quad, src/nn/cnnquad.c; exit $rc)" test "$rc" = 0
refuses "model.param meanfield" "is not supported (a CNN has biases (model.bias_scale) and draws its weights" \
  --set model.param=meanfield
refuses "optimizer.lr_in" "series loss_gap, lr_in / lr_out or loss.optimum is not supported" --set optimizer.lr_in=0.2
rc=$(code "$DYNSWEEP" plan "$sweep" --set train.distributed=on)
check "plan takes train.distributed: on (a CNN's samples split over its team: cnn_team.sh; exit $rc)" test "$rc" = 0
refuses "CNN keys on an MLP" "without model.type cnn is not supported (they are the convolutional net's" \
  --set model.type=relu
# layer lists and named nets (src/nn/cnnnets.c): plan names the layer that does not fit
refuses "myrtle5 on 28 x 28" "model.net myrtle5 on a 1 x 28 x 28 image: layer 13 (avgpool): window 2 larger than its 1 x 1 input" \
  --set model.net=myrtle5
refuses "a pooling window larger than its input" "layer 3 (maxpool): window 30 larger than its 28 x 28 input" \
  --set model.pool=max --set model.pool_size=30
refuses "wrn with depth 2" "model.depth is the WRN depth d = 6 N + 4" --set model.net=wrn
refuses "myrtle5 with a kernel" "model.net myrtle5 fixes its layers; model.kernel applies" \
  --set model.net=myrtle5 --set model.kernel=5
rc=$(code "$DYNSWEEP" plan "$sweep" --set model.net=wrn --set model.depth=10 --set model.pool=none)
check "plan takes wrn-10-k (exit $rc)" test "$rc" = 0

# ---- dropout in the point trainer (tf_mnist, dropout 0.5, 10 steps) -----------
drop=$T/drop.yaml
sed -e 's/^train: {steps: 30}$/train: {steps: 10}/' -e 's/^  kernel: 3$/  net: tf_mnist/' \
    -e 's/^  bias_scale: 1$/  dropout: 0.5/' "$sweep" >"$drop"
grep -q 'net: tf_mnist' "$drop" && grep -q 'dropout: 0.5' "$drop" || bad "drop.yaml: sed changed nothing"
drun 2 "$drop" -o "$T/d2.h5" -q
drun 1 "$drop" -o "$T/d1.h5" -q
check "tf_mnist with dropout: -n 2 and -n 1 stores equal bit for bit (masks keyed by sample)" \
  same_points "$T/d2.h5" "$T/d1.h5"
sed -i 's/^  dropout: 0.5$/  dropout: 0/' "$drop"
drun 1 "$drop" -o "$T/d0.h5" -q
check "... and differ from the same net without dropout" bash -c "! '$PY' '$DS_SRC/tests/store_diff.py' '$T/d1.h5' '$T/d0.h5' >/dev/null 2>&1"

# ---- run: -n 2 and -n 1, PyTorch ---------------------------------------------
drun 2 "$sweep" -o "$T/a.h5" -q
drun 1 "$sweep" -o "$T/b.h5" -q
check "-n 2 and -n 1 stores: every series equal bit for bit" same_points "$T/a.h5" "$T/b.h5"
check "loss and test_loss equal PyTorch float64's GD to 1e-12" \
  "$PY" "$DS_SRC/tests/cnn_sweep.py" "$DUMP" "$sweep" "$T/a.h5" 30
# the check can fail: another learning rate in the replay's sweep
sed 's/^  lr: \[0.1, 0.3\]$/  lr: [0.1, 0.31]/' "$sweep" >"$T/other.yaml"
check "... and fails against another sweep's replay" bash -c \
  "! '$PY' '$DS_SRC/tests/cnn_sweep.py' '$DUMP' '$T/other.yaml' '$T/a.h5' 30 >/dev/null"

# ---- drain and resume (momentum + minibatches: optimiser and batcher state) ----
long=$T/long.yaml
sed -e 's/^train: {steps: 30}$/train: {steps: 1500}/' \
    -e 's/^optimizer: {type: gd, lr: 0.1}$/optimizer: {type: momentum, lr: 0.05, batch_size: 8}/' \
    -e 's/^record: {series: \[loss, test_loss\], every: 1}$/record: {series: [loss, test_loss, grad_norm, param_norm], every: 50}/' \
    -e 's/^  lr: \[0.1, 0.3\]$/  lr: [0.01, 0.02]/' "$sweep" >"$long"
grep -q 'steps: 1500' "$long" && grep -q momentum "$long" && grep -q 'every: 50' "$long" ||
  bad "long.yaml: sed changed nothing"
drun 2 "$long" -o "$T/lref.h5" -q
drain_run "$T/l.h5" 1 "$T/l1.log" -n 2 "$DYNSWEEP" run "$long" -o "$T/l.h5" --checkpoint-every 0.2
check "drain: exit 3 (got $RC)" test "$RC" -eq 3
nck=$(h5ls "$T/l.h5/checkpoints" 2>/dev/null | wc -l)
check "the drained store holds checkpoints of CNN points ($nck)" test "$nck" -gt 0
drun 2 "$long" -o "$T/l.h5" -q 2>"$T/l2.log"
check "resume continues from a checkpoint" grep -q "from a checkpoint" "$T/l2.log"
check "resumed CNN sweep equals the uninterrupted run bit for bit" same_points "$T/lref.h5" "$T/l.h5"

# ---- the same with dropout (masks keyed by the optimiser's step, restored on resume) ----
sed -e 's/^  bias_scale: 1$/  dropout: 0.3/' -e 's/^train: {steps: 1500}$/train: {steps: 300}/' "$long" >"$T/ldrop.yaml"
grep -q 'dropout: 0.3' "$T/ldrop.yaml" || bad "ldrop.yaml: sed changed nothing"
drun 2 "$T/ldrop.yaml" -o "$T/dref.h5" -q
drain_run "$T/dl.h5" 1 "$T/d1.log" -n 2 "$DYNSWEEP" run "$T/ldrop.yaml" -o "$T/dl.h5" --checkpoint-every 0.2
check "dropout sweep drained: exit 3 (got $RC)" test "$RC" -eq 3
drun 2 "$T/ldrop.yaml" -o "$T/dl.h5" -q 2>"$T/dl2.log"
check "... resumes from a checkpoint" grep -q "from a checkpoint" "$T/dl2.log"
check "... and equals the uninterrupted dropout run bit for bit" same_points "$T/dref.h5" "$T/dl.h5"
report
