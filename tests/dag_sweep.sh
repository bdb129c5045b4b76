#!/usr/bin/env bash
# dag_sweep.sh -- issue 26: seed 003's DenseNet-DAG (model.net dag) trained
# from a sweep, end to end: a point of sweeps/repro/003_dag_kernel.yaml
# reduced to m = 6 and 25 GD steps (absolute lr 0.05) with the NTK at every
# step; mpirun -n 2 and -n 1 give the same store; its loss, ntk/top and
# ntk/kernel_change at every step, and the layer spectra, the Hessian's
# top 2 and its whole spectrum (hessian_full: pdsyevd on the team) every 5 steps, equal PyTorch float64's replay from the same weights,
# mask and data (tests/dag_sweep.py, functorch NTK, full Hessian); and
# model.approx quad's losses equal PyTorch's f_quad replay (1 rank, a team of 2).
# model.dag_readout_drop (the readout masked too): with 0.5, on a team of 2,
# the same replay with the readout's mask read off theta0's zeros and its
# units scaled by 1/sqrt(kept in-degree); with 0 (the default) nothing
# changes: the sweep's hash is the one without the key and point 0's net,
# weights and data (cnn_sweep_dump) are the bits of the code before the key
# existed (the sha256 below; the whole store was compared then too).
# Skips (77) without h5py or torch.
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import h5py, numpy, torch, functorch' 2>/dev/null || { echo "skip: no h5py/numpy/torch"; exit 77; }
SW=$DS_SRC/sweeps/repro/003_dag_kernel.yaml
DUMP=$DS_BUILD/tests/cnn_sweep_dump
# the dump reads the sweep file: a copy with the overrides applied
"$PY" - "$SW" "$T/dag.yaml" <<'PYEOF'
import os, sys, yaml
src, out = sys.argv[1:3]
y = yaml.safe_load(open(src))
y["data"]["path"] = os.path.join(os.path.dirname(src), y["data"]["path"])
y["grid"] = {"width": [6]}
y["train"]["steps"] = 25
y["optimizer"].update(lr=0.05, lr_units="absolute")
y["record"]["every"] = 1
y["record"]["spectra"]["ntk"]["every"] = 1
y["record"]["spectra"].update(hessian={"every": 5}, hessian_full={"every": 5}, layers={"every": 5}, top_k=2)
yaml.safe_dump(y, open(out, "w"), sort_keys=False)
y["model"]["dag_readout_drop"] = 0.5
yaml.safe_dump(y, open(out.replace(".yaml", "_r.yaml"), "w"), sort_keys=False)
PYEOF
check "run -n 2" drun 2 "$T/dag.yaml" -o "$T/a.h5"
check "run -n 1" drun 1 "$T/dag.yaml" -o "$T/b.h5"
check "-n 2 and -n 1 stores equal" same_points "$T/a.h5" "$T/b.h5"
check "loss, lambda_max(K_t), kernel change, layer svs, Hessian top 2 and spectrum = PyTorch float64" \
  "$PY" "$DS_SRC/tests/dag_sweep.py" "$DUMP" "$T/dag.yaml" "$T/a.h5" 6 2
# model.approx quad through the DAG (cnnquad.c: the masked layers' second-order
# forward mode), on one rank and on a team of 2 (samples split); the spectra,
# which approx quad does not take, off
Q=(--set model.approx=quad)
for d in ntk hessian hessian_full layers; do Q+=(--set "record.spectra.$d.every=0"); done
drun 1 "$T/dag.yaml" -o "$T/q.h5" -q "${Q[@]}"
check "model.approx quad: every loss = PyTorch float64's f_quad GD replay" \
  "$PY" "$DS_SRC/tests/dag_sweep.py" "$DUMP" "$T/dag.yaml" "$T/q.h5" 6 2 quad
drun 3 "$T/dag.yaml" -o "$T/q2.h5" -q "${Q[@]}" --set train.ranks_per_point=2
check "model.approx quad on a team of 2: the same replay" \
  "$PY" "$DS_SRC/tests/dag_sweep.py" "$DUMP" "$T/dag.yaml" "$T/q2.h5" 6 2 quad
# the masked readout: a team of 2 (the NTK's Jacobian split over the members,
# each drawing the same masks) against PyTorch's replay
drun 3 "$T/dag_r.yaml" -o "$T/r.h5" -q --set train.ranks_per_point=2
check "model.dag_readout_drop 0.5 on a team of 2: loss, NTK, kernel change, svs, Hessian = PyTorch float64" \
  "$PY" "$DS_SRC/tests/dag_sweep.py" "$DUMP" "$T/dag_r.yaml" "$T/r.h5" 6 2
# ... drained mid-point on a team of 2 and resumed: the masks come back from
# the init stream, K_0 (kernel change) from the checkpoint; 200000 steps,
# ~2 s here
L=(--set train.ranks_per_point=2 --set train.steps=200000 --set record.every=20000
   --set record.spectra.ntk.every=50000 --set record.spectra.hessian.every=0
   --set record.spectra.hessian_full.every=0 --set record.spectra.layers.every=0)
drun 3 "$T/dag_r.yaml" -o "$T/rref.h5" -q "${L[@]}"
drain_run "$T/rd.h5" 0.5 "$T/rd1.log" -n 3 "$DYNSWEEP" run "$T/dag_r.yaml" -o "$T/rd.h5" --checkpoint-every 0.1 "${L[@]}"
check "masked readout, a team of 2: drained (exit $RC)" test "$RC" -eq 3
drun 3 "$T/dag_r.yaml" -o "$T/rd.h5" -q "${L[@]}" 2>"$T/rd2.log"
check "... resumes from a checkpoint" grep -q "from a checkpoint" "$T/rd2.log"
check "... and equals the uninterrupted run bit for bit" same_points "$T/rref.h5" "$T/rd.h5"
# model.dag_readout_drop 0: today's sweep and point
hash_of() { "$DYNSWEEP" plan "$@" 2>&1 | sed -n "s/^sweep .*, hash \([0-9a-f]*\)$/\1/p"; }
h0=$(hash_of "$T/dag.yaml") h1=$(hash_of "$T/dag.yaml" --set model.dag_readout_drop=0)
h2=$(hash_of "$T/dag.yaml" --set model.dag_readout_drop=0.5)
check "model.dag_readout_drop 0 keeps the sweep's hash ($h0 = $h1; 0.5: $h2)" \
  test -n "$h0" -a "$h0" = "$h1" -a "$h0" != "$h2"
"$DUMP" "$T/dag.yaml" 0 "$T/p0.bin"
sum=$(sha256sum < "$T/p0.bin" | cut -c1-16)
check "model.dag_readout_drop 0: point 0's dump is today's bit for bit (sha256 $sum)" \
  test "$sum" = 5aecbc8cdafa4e6d
report
