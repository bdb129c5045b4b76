# ctest repro_003_dag: the reduced form of seed 003 Fig. 2.2
# (sweeps/repro/003_dag_kernel.yaml, docs/repro/003_dag_kernel.md): the
# DenseNet-DAG with edges dropped once w.p. 1/2 trained by GD on 10 points;
# the max over training of ||K_t - K_0||_2 / ||K_0||_2 (ntk/kernel_change_2,
# the paper's spectral norm) falls with the width m with a log-log slope near
# -1/2 (checked in [-0.8, -0.3]) over 3 widths x 2 replicas, 300 steps
# (tools/repro_003_dag.py --check; it also prints the Frobenius slope); the
# same for the CNN companion (003_dag_kernel_cnn.yaml, reduced). Also plan's
# refusals for the DAG's keys.
source "$(dirname "$0")/lib.sh"
SW=$DS_SRC/sweeps/repro/003_dag_kernel.yaml
plan_refuses "$SW" "model.dag_drop 1" "model.dag_drop" --set model.dag_drop=1
plan_refuses "$SW" "model.dag_drop on another net" "model.dag_drop without model.net dag" \
  --set model.net=cnn --set model.dag_drop=0.3
plan_refuses "$SW" "model.dag_readout_drop 1" "model.dag_readout_drop: must be >= 0 and < 1" \
  --set model.dag_readout_drop=1
plan_refuses "$SW" "model.dag_readout_drop on another net" \
  "model.dag_readout_drop without model.net dag" --set model.net=cnn --set model.dag_readout_drop=0.5
# f_quad of the dag block (src/nn/cnnquad.c) is written: plan takes it
rc=$(code "$DYNSWEEP" plan "$SW" --set model.approx=quad --set record.spectra.ntk.every=0)
[ "$rc" = 0 ] || cat "$T/err" >&2
check "plan takes model.net dag with model.approx quad (exit $rc)" [ "$rc" = 0 ]
plan_refuses "$SW" "model.net dag with model.dropout" "model.net dag has no dropout" \
  --set model.dropout=0.5
plan_refuses "$SW" "model.net dag with a kernel" "model.net dag fixes its layers" \
  --set model.kernel=5
if [ "$HAVE_H5PY" != 1 ]; then
  echo "SKIP: the slope check needs /usr/bin/python3 with h5py and numpy"; report; exit $?
fi
start=$(date +%s%N)
if drun 2 "$SW" -o "$T/dag.h5" --set 'grid.width=[16, 128, 1024]' --set grid.replicas=2 \
     --set train.steps=300 --set record.every=10 --set record.spectra.ntk.every=10 \
     >"$T/run.log" 2>&1; then
  ok "reduced DAG sweep ran ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
else
  bad "reduced DAG sweep failed"; cat "$T/run.log" >&2
fi
check "max spectral kernel change falls as m^(-1/2): slope in [-0.8, -0.3]" \
  "$PY" "$DS_SRC/tools/repro_003_dag.py" "$T/dag.h5" --check -0.8 -0.3
# the masked readout (model.dag_readout_drop 0.5), the same reduced sweep
# (~7 CPU-s): spectral slope -0.623 here (unmasked -0.650), the same range
drun 2 "$SW" -o "$T/dagr.h5" -q --set 'grid.width=[16, 128, 1024]' --set grid.replicas=2 \
  --set train.steps=300 --set record.every=10 --set record.spectra.ntk.every=10 \
  --set model.dag_readout_drop=0.5
check "masked readout: max spectral kernel change falls as m^(-1/2): slope in [-0.8, -0.3]" \
  "$PY" "$DS_SRC/tools/repro_003_dag.py" "$T/dagr.h5" --check -0.8 -0.3
# the companion claim for CNNs (sweeps/repro/003_dag_kernel_cnn.yaml: 2 conv
# layers 3x3 of C channels + dense readout): C = 8, 32, 128, 2 replicas, 300
# steps (~3.5 CPU-s); the full sweep's slope is -0.75 (C >= 32: -0.96), this
# one's -0.87: checked in [-1.2, -0.4] (falls with C, steeper than -1/2)
drun 1 "$DS_SRC/sweeps/repro/003_dag_kernel_cnn.yaml" -o "$T/cnn.h5" -q --set 'grid.width=[8, 32, 128]' \
  --set grid.replicas=2 --set train.steps=300 --set record.every=10 --set record.spectra.ntk.every=10
check "CNN companion: max spectral kernel change falls with C: slope in [-1.2, -0.4]" \
  "$PY" "$DS_SRC/tools/repro_003_dag.py" "$T/cnn.h5" --check -1.2 -0.4
report
