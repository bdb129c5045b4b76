#!/usr/bin/env bash
# data_images.sh -- issue 26, "Data": the CIFAR-10/100 and SVHN kinds through
# the sweep tools, on files written by test_data_images (write mode):
#   - scipy.io.savemat's .mat files (plain and zlib-compressed) load to the
#     generator's pixels and labels (an independent MAT writer; skipped
#     without scipy);
#   - plan refuses a CIFAR file cut short, a CIFAR label out of range and an
#     SVHN label outside 1..10, naming the file (exit 2);
#   - a CNN sweep on a directory of CIFAR-10 batches (classes [0, 1] as
#     -1/+1, per-channel standardisation, no model.image: the kind's
#     3 x 32 x 32) plans and runs end to end under mpirun -n 1, and its
#     losses equal PyTorch float64's replay of the same GD (cnn_sweep.py).
. "$(dirname "$0")/lib.sh"
unset DYNSWEEP_NO_REEXEC OPENBLAS_CORETYPE
export OPENBLAS_NUM_THREADS=1
TDI=${DS_BUILD:?DS_BUILD must point to the build tree}/tests/test_data_images
I=$T/in
mkdir -p "$I"
"$TDI" write "$I"

# ---- scipy's MAT writer ---------------------------------------------------------
mkdir -p "$T/sp"
rc=$(code "$PY" "$DS_SRC/tests/data_images.py" "$T/sp")
if [ "$rc" = 77 ]; then
  echo "skip: scipy.io.savemat cross-check ($(cat "$T/out"))"
else
  check "data_images.py wrote scipy's .mat files (exit $rc)" test "$rc" = 0
  rc=$(code "$TDI" scipy "$T/sp")
  grep -q 'scipy.io.savemat' "$T/err" && cat "$T/err" >&2
  check "scipy.io.savemat files (plain, do_compression) load to the generator's pixels and labels (exit $rc)" \
    bash -c "[ $rc = 0 ] && ! grep -q 'scipy' '$T/err'"
fi

# ---- plan refuses broken files ------------------------------------------------------
HEAD='name: images
loss: {reduction: half_mean}
optimizer: {lr: 0.01}
train: {steps: 2}'
refuses() { # refuses NAME 'DATA YAML' MESSAGE
  local name=$1 data=$2 want=$3 rc
  printf '%s\n%s\n' "$HEAD" "$data" >"$T/$name.yaml"
  rc=$(code "$DYNSWEEP" plan "$T/$name.yaml")
  if [ "$rc" = 2 ] && grep -qF -- "$want" "$T/err"; then ok "$name: plan exits 2 with: $want"
  else bad "$name: plan exit $rc, stderr: $(head -c 600 "$T/err") -- want: $want"; fi
}
refuses cifar_short "data: {kind: cifar10, path: in/c10_short.bin, n_train: 2, n_test: 0}" \
  "data.path: $I/c10_short.bin: 15265 bytes is not a multiple of the 3073-byte CIFAR-10 record"
refuses cifar_label "data: {kind: cifar10, path: in/c10_label.bin, n_train: 2, n_test: 0}" \
  "data.path: $I/c10_label.bin: record 3 (byte 6146): label 10 out of range, expected 0..9 (CIFAR-10)"
refuses svhn_label "data: {kind: svhn, path: in/svhn_label0.mat, n_train: 2, n_test: 0}" \
  "data.path: $I/svhn_label0.mat: y(5) is 0, expected a label 1..10 (10 = digit 0)"
refuses svhn_dir "data: {kind: svhn, path: in/c10, n_train: 2, n_test: 0}" \
  "$I/c10: is a directory; data.kind svhn reads one file"
mkdir -p "$I/c10bad"
cp "$I/c10/data_batch_1.bin" "$I/c10bad/"
head -c 3000 "$I/c10/test_batch.bin" >"$I/c10bad/test_batch.bin"
refuses cifar_test_dir "data: {kind: cifar10, path: in/c10bad, test_path: in/c10bad, n_train: 2, n_test: 1}" \
  "$I/c10bad/test_batch.bin: 3000 bytes is not a multiple of the 3073-byte CIFAR-10 record"
refuses both_standardize "data: {kind: cifar10, path: in/c10, n_train: 2, n_test: 0, standardize: true, standardize_channels: true}" \
  "data.standardize_channels: per-channel standardisation replaces data.standardize"
refuses coarse_cifar10 "data: {kind: cifar10, path: in/c10, n_train: 2, n_test: 0, cifar100_labels: coarse}" \
  "data.cifar100_labels: coarse applies to data.kind cifar100, got data.kind cifar10"
refuses cnn_image "data: {kind: cifar10, path: in/c10, n_train: 2, n_test: 0}
model: {type: cnn, width: 2, depth: 1, image: [1, 32, 32]}" \
  "model.image: 1 x 32 x 32 holds 1024 features, but data.d_in is 3072"

# ---- a CNN sweep on CIFAR-10 batches, end to end -----------------------------------
cat >"$T/cnn.yaml" <<'YAML'
name: cnn_cifar
seed: 3
model: {type: cnn, width: 2, depth: 2, kernel: 3, stride: 2, padding: same, readout: flatten,
        param: ntk, bias_scale: 1}
data: {kind: cifar10, path: in/c10, test_path: in/c10, classes: [0, 1], labels: pm1,
       pixel_scale: 0.00392156862745098, standardize_channels: true, n_train: 6, n_test: 4}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.1}
train: {steps: 5}
record: {series: [loss, test_loss], every: 1}
grid: {lr: [0.1, 0.2]}
YAML
rc=$(code "$DYNSWEEP" plan "$T/cnn.yaml")
check "plan takes a CNN on a CIFAR-10 directory without model.image (exit $rc)" test "$rc" = 0
[ "$rc" = 0 ] || cat "$T/err" >&2
rc=$(code mpirun -n 1 "$DYNSWEEP" run "$T/cnn.yaml" -o "$T/cnn.h5" -q)
check "mpirun -n 1 dynsweep run: exit $rc" test "$rc" = 0
[ "$rc" = 0 ] || cat "$T/err" >&2
# the store's input record names every batch file the directories stand for
h5dump -a inputs "$T/cnn.h5" >"$T/inputs" 2>&1 || true
nb=$(grep -cE 'c10/(data_batch_(1|2|10)|test_batch)\.bin' "$T/inputs" || true)
check "the store's inputs list data_batch_1, _2, _10 and test_batch.bin ($nb of 4)" test "$nb" = 4
if "$PY" -c 'import h5py, numpy, torch' 2>/dev/null; then
  check "the CIFAR CNN's loss and test_loss equal PyTorch float64's GD on 3 x 32 x 32 images" \
    "$PY" "$DS_SRC/tests/cnn_sweep.py" "$DS_BUILD/tests/cnn_sweep_dump" "$T/cnn.yaml" "$T/cnn.h5" 5
else
  echo "skip: the PyTorch replay (no h5py/numpy/torch)"
  check "the store reads back" h5dump -H "$T/cnn.h5"
fi

# ---- plan's read time counts the batch files a directory stands for ----------------
# (it took stat() of the directory itself: 4 KB however many batches it held)
"$PY" - "$T/big" <<'PY'
import os, sys
import numpy as np
d = os.path.join(sys.argv[1], "cifar-10-batches-bin")
os.makedirs(d)
r = np.random.default_rng(0).integers(0, 256, (2000, 3073)).astype(np.uint8)
r[:, 0] %= 10
for b in range(1, 6):
    r.tofile(os.path.join(d, "data_batch_%d.bin" % b))
with open(os.path.join(sys.argv[1], "all.bin"), "wb") as f:
    for b in range(1, 6):
        r.tofile(f)
PY
secs() { # core-seconds plan estimates for 40 replicas of a 1-step CNN on $1
  printf 'name: rt\nmodel: {type: cnn, width: 2, depth: 1}\ndata: {kind: cifar10, path: %s, n_train: 8, n_test: 0}\nloss: {reduction: mean}\noptimizer: {lr: 0.1}\ntrain: {steps: 1}\ngrid: {replicas: 40}\n' "$1" >"$T/rt.yaml"
  "$DYNSWEEP" plan "$T/rt.yaml" 2>&1 | sed -n 's/.*(\([0-9.]*\) core-seconds.*/\1/p'
}
sd=$(secs "$T/big/cifar-10-batches-bin") sf=$(secs "$T/big/all.bin")
check "plan: a CIFAR-10 directory of 5 batches (30 MB) costs what one file of them does ($sd vs $sf core-seconds)" \
  awk "BEGIN{exit !($sd > 0 && $sd == $sf && $sf > 3)}"

# ---- an IDX file's own image shape (its header: n x rows x cols) ------------------
# 16 x 64 images hold 1024 = 32^2 features: the old square default made them 32 x 32
"$PY" - "$T/wide" <<'PY'
import struct, sys
import numpy as np
n, h, w = 6, 16, 64
with open(sys.argv[1] + "-images.idx", "wb") as f:
    f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, n, h, w))
    f.write(np.random.default_rng(1).integers(0, 256, n * h * w).astype(np.uint8).tobytes())
with open(sys.argv[1] + "-labels.idx", "wb") as f:
    f.write(struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes([0, 1] * (n // 2)))
PY
refuses idx_shape "data: {kind: idx, path: $T/wide-images.idx, labels_path: $T/wide-labels.idx, n_train: 4, n_test: 0}
model: {type: cnn, net: myrtle5, width: 2}" \
  "model.net myrtle5 on a 1 x 16 x 64 image"
printf '%s\n%s\n' "$HEAD" "data: {kind: idx, path: $T/wide-images.idx, labels_path: $T/wide-labels.idx, n_train: 4, n_test: 0}
model: {type: cnn, width: 2, depth: 2, kernel: 5, pool: max}" >"$T/wide.yaml"
rc=$(code "$DYNSWEEP" plan "$T/wide.yaml")
check "plan takes a CNN on 16 x 64 IDX images without model.image (exit $rc)" test "$rc" = 0
report
