#!/usr/bin/env bash
# cnn_plan_mem.sh -- issue 26: `plan`'s memory estimate of a CNN point covers
# what the point allocates (src/config/cost.c cnn_mem_bytes), so that `run`
# never starts a point that cannot fit (src/sched/rankmem.c). For each case
# the estimate is found by bisecting `plan --rank-memory MB` (the smallest MB
# at which no point "cannot fit") and the point is run alone on one rank under
# /usr/bin/time (its peak RSS). Checks: estimate >= peak - the peak of a
# trivial CNN run (MPI, HDF5 and the binary: what the estimate leaves out), and
# estimate <= 2 peak + 64 MB (not so generous that fitting points are refused).
# Cases: plain GD, f_lin, f_quad (their R-operator buffers of every layer's
# output per sample: about 3x the plain point's memory here), the Hessian by
# Lanczos (HVP buffers and its vectors), the full Hessian (P x P twice), and a
# DAG block (its edge mask and effective weights); and an MLP's full Hessian
# (it was estimated at 2 P^2 doubles; pdsyevd's path takes 4.0-4.2 P^2). Before this estimate
# counted them, f_quad's 824 MB point (C = 64, n = 64) was estimated at 256 MB.
. "$(dirname "$0")/lib.sh"
cat >"$T/base.yaml" <<'YEOF'
name: planmem
seed: 3
model: {type: cnn, width: 16, depth: 4, kernel: 3, padding: same, readout: flatten, param: ntk, image: [1, 28, 28]}
data: {kind: rank2, d_in: 784, n_train: 32, n_test: 16}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.1}
train: {steps: 2}
record: {series: [loss], every: 1}
YEOF
# estimate SWEEP [--set ...]: plan's estimate in MB
estimate() {
  local lo=1 hi=4096 mid
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if "$DYNSWEEP" plan "$@" --rank-memory "$mid" 2>&1 | grep -q " 0 point(s) cannot fit"; then hi=$mid; else lo=$mid; fi
  done
  echo "$hi"
}
# peak SWEEP [--set ...]: the run's peak RSS in MB (one rank runs its points itself)
peak() {
  mpirun --oversubscribe -n 1 /usr/bin/time -f %M -o "$T/rss" "$DYNSWEEP" run "$@" -o "$T/p.h5" -q >/dev/null 2>&1 ||
    { echo 0; return; }
  rm -f "$T/p.h5"
  echo $(($(tail -1 "$T/rss") / 1024))
}
# trivial: 8 channels, so that its second conv takes the implicit GEMM too (conv.c:
# LIBXSMM's JIT code and registry, a fixed ~7 MB of the process, not of the point)
base=$(peak "$T/base.yaml" --set model.width=8 --set model.depth=2 --set data.n_train=2 --set data.n_test=0)
check "a trivial CNN run's peak RSS ($base MB) measured" test "$base" -gt 0
case_() {
  local what=$1; shift
  local e p
  e=$(estimate "$@")
  p=$(peak "$@")
  echo "$what: estimate $e MB, peak RSS $p MB (trivial run $base MB)"
  check "$what: the run finished" test "$p" -gt 0
  check "$what: estimate $e MB >= peak - trivial run = $((p - base)) MB" test "$e" -ge $((p - base))
  check "$what: estimate $e MB <= 2 x peak + 64 = $((2 * p + 64)) MB" test "$e" -le $((2 * p + 64))
}
case_ "plain GD" "$T/base.yaml"
case_ "f_lin" "$T/base.yaml" --set model.approx=lin
case_ "f_quad" "$T/base.yaml" --set model.approx=quad
case_ "Hessian top-k (Lanczos, 12 iterations)" "$T/base.yaml" --set train.steps=1 \
  --set 'record.spectra={hessian: {every: 1}, lanczos_iters: 12, top_k: 2}'
# 2 samples: the P HVPs cost 4x less than with 8, the P x P matrices the same
case_ "full Hessian (P = 3,325)" "$T/base.yaml" --set model.width=4 --set model.depth=2 --set data.n_train=2 \
  --set model.image=[1,28,28] --set train.steps=1 --set 'record.spectra={hessian_full: {every: 1}}'
case_ "DAG block, 2 x 1024 units" "$T/base.yaml" --set model.net=dag --set model.width=1024 --set model.depth=2 \
  --set model.image=[1,4,4] --set data.d_in=16 --set model.bias_scale=0 --set data.n_train=10 --set data.n_test=0
# the MLP's full Hessian goes through the same pdsyevd (width 48, depth 3:
# P = 16 x 48 + 48 x 48 + 48 weights and 97 biases = 3,217)
cat >"$T/mlp.yaml" <<'YEOF'
name: planmem-mlp
seed: 3
model: {type: relu, width: 48, depth: 3, bias: true}
data: {kind: teacher, d_in: 16, d_out: 1, n_train: 16, n_test: 0}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.1}
train: {steps: 1}
record: {series: [loss], every: 1, spectra: {hessian_full: {every: 1}}}
YEOF
case_ "MLP full Hessian (P = 3,217)" "$T/mlp.yaml"
report
