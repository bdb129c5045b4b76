#!/usr/bin/env bash
# cnn_diag.sh -- issue 26: the diagnostics of CNN points, end to end.
# tests/sweeps/cnn_diag.yaml (a 2-conv-layer CNN on 4 x 4 images of the rank-2
# task; GD and SGD with layer spectra, NTK, batch NTK, AGOP and the escape
# proxy recorded):
#   - plan takes it, and refuses what CNNs do not have with the reason
#     (hessian_full above hessian_full_max; activations of a tanh net);
#   - record.spectra.hessian (Lanczos on ds_cnn_hvp's R-operator HVPs): the
#     store's top-4 eigenvalues at steps 0, 10, 20 equal those of PyTorch's
#     full float64 Hessian of the GD replay (cnn_hessian_sweep.py, 1e-8
#     relative; Lanczos run to P iterations), on 1 rank and on teams of 2;
#   - hessian_full (every eigenvalue: P HVP columns, pdsyevd) equals the same
#     replay's eigvalsh to 1e-8 on 1 rank and on teams of 2, and plan refuses
#     it above record.spectra.hessian_full_max;
#   - with a hidden layer and dropout 0.5 (cnn_dropout_sweep.py): every
#     loss of 15 GD steps (dropout on, the masks cnn_sweep_dump draws through
#     ds_dropout_mask) equals PyTorch's replay to 1e-12, and hessian/top
#     (1e-8) and hessian/spectrum (1e-12) the dropout-off Hessian's, on 1
#     rank and on teams of 2; GD without dropout, the masks a step late and
#     the Hessian with dropout on all miss by > 1e-4;
#   - model.approx lin (ds_cnn_lin): the losses of 40 GD steps equal
#     PyTorch's f_lin replay (cnn_lin_sweep.py, 1e-10);
#   - mpirun -n 1 stores series whose values equal PyTorch float64's replay
#     (cnn_diag_sweep.py: NTK eigenvalues, critical lr, kernel change, loss
#     split, kernel singular values, AGOP alignment, each ReLU's singular
#     values and nonlinearity ratio; 1e-10 relative), and the
#     check fails against another learning rate's replay;
#   - -n 2 gives the same store bit for bit, teams of 2 ranks to 1e-10;
#   - optimizer.lr_units lambda0 on a CNN: eta * lambda_0 = lr, lambda_0 the
#     top NTK eigenvalue of the same run's step 0;
#   - a drain (SIGUSR1) and resume equals the uninterrupted run bit for bit
#     (K_0 of the kernel change comes back from the checkpoint);
#   - record.spectra.activations on (a hidden layer with dropout 0.5; approx
#     quad) leaves every other series bit for bit as without it.
# Skips (77) without h5py or torch.
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import h5py, numpy, torch, functorch' 2>/dev/null || { echo "skip: no h5py/numpy/torch"; exit 77; }
sweep=$DS_SRC/tests/sweeps/cnn_diag.yaml
DUMP=$DS_BUILD/tests/cnn_sweep_dump

refuses() { plan_refuses "$sweep" "$@"; } # refuses WHAT MESSAGE --set ... (lib.sh)
rc=$(code "$DYNSWEEP" plan "$sweep")
check "plan takes the CNN diagnostics sweep (exit $rc)" test "$rc" = 0
refuses "the full Hessian above hessian_full_max" "record.spectra.hessian_full: the network has 163 parameters, more than record.spectra.hessian_full_max = 100" \
  --set record.spectra.hessian_full.every=10 --set record.spectra.hessian_full_max=100
refuses "activation spectra of a tanh MLP (CNNs and relu MLPs have them)" \
  "record.spectra.activations: needs model.type relu or cnn" --set model.type=tanh

drun 1 "$sweep" -o "$T/a.h5" -q
check "the store's diagnostics equal PyTorch float64's replay to 1e-10" \
  "$PY" "$DS_SRC/tests/cnn_diag_sweep.py" "$DUMP" "$sweep" "$T/a.h5"
sed 's/^optimizer: {type: gd, lr: 0.5}$/optimizer: {type: gd, lr: 0.51}/' "$sweep" >"$T/other.yaml"
grep -q 'lr: 0.51' "$T/other.yaml" || bad "other.yaml: sed changed nothing"
check "... and fails against another learning rate's replay" bash -c \
  "! '$PY' '$DS_SRC/tests/cnn_diag_sweep.py' '$DUMP' '$T/other.yaml' '$T/a.h5' >/dev/null"
drun 1 "$sweep" -o "$T/h.h5" -q --set record.spectra.hessian.every=10 --set record.spectra.lanczos_iters=200
check "hessian/top equals PyTorch float64's full Hessian eigenvalues to 1e-8" \
  "$PY" "$DS_SRC/tests/cnn_hessian_sweep.py" "$DUMP" "$sweep" "$T/h.h5"
drun 1 "$sweep" -o "$T/hf.h5" -q --set record.spectra.hessian_full.every=10
check "hessian/spectrum (P = 163 HVP columns, pdsyevd) equals PyTorch float64's full Hessian to 1e-8" \
  "$PY" "$DS_SRC/tests/cnn_hessian_sweep.py" "$DUMP" "$sweep" "$T/hf.h5"
drun 3 "$sweep" -o "$T/hf2.h5" -q --set record.spectra.hessian_full.every=10 --set train.ranks_per_point=2
check "... and on teams of 2 ranks (sample shares of each column summed)" \
  "$PY" "$DS_SRC/tests/cnn_hessian_sweep.py" "$DUMP" "$sweep" "$T/hf2.h5"
drun 3 "$sweep" -o "$T/h2.h5" -q --set record.spectra.hessian.every=10 --set record.spectra.lanczos_iters=200 \
  --set train.ranks_per_point=2
check "... and on teams of 2 ranks (sample shares of the HVP summed)" \
  "$PY" "$DS_SRC/tests/cnn_hessian_sweep.py" "$DUMP" "$sweep" "$T/h2.h5"
# dropout (a hidden layer of 6 with dropout 0.5, P = 263, 15 GD steps): the
# trajectory needs every step's masks (cnn_sweep_dump ... STEPS writes them
# through ds_dropout_mask) and the Hessian is taken with dropout off
# (cnn_dropout_sweep.py; it also asserts that GD without dropout, the masks
# a step late and the Hessian with dropout on all miss the store)
"$PY" - "$sweep" "$T/drop.yaml" <<'PYEOF'
import sys, yaml
y = yaml.safe_load(open(sys.argv[1]))
y["model"].update(width=2, hidden=6, dropout=0.5)
y["train"]["steps"] = 15
y["record"] = {"series": ["loss", "test_loss"], "every": 1, "spectra": {
    "hessian": {"every": 5}, "hessian_full": {"every": 5}, "top_k": 4, "lanczos_iters": 300}}
y["grid"] = {"optimizer.batch_size": [0]}
yaml.safe_dump(y, open(sys.argv[2], "w"), sort_keys=False)
PYEOF
drun 1 "$T/drop.yaml" -o "$T/drop.h5" -q
check "dropout 0.5: loss (masks on) every step = PyTorch's replay to 1e-12, hessian/top (1e-8) and hessian/spectrum (1e-12) = its dropout-off Hessian" \
  "$PY" "$DS_SRC/tests/cnn_dropout_sweep.py" "$DUMP" "$T/drop.yaml" "$T/drop.h5"
drun 3 "$T/drop.yaml" -o "$T/drop2.h5" -q --set train.ranks_per_point=2
check "... and on teams of 2 ranks (each member the masks of its samples' training-set indices)" \
  "$PY" "$DS_SRC/tests/cnn_dropout_sweep.py" "$DUMP" "$T/drop.yaml" "$T/drop2.h5"
# model.approx lin (f_lin around theta_0, ds_cnn_lin) without the spectra
# (the NTK of f_lin is K_0's; the diagnostics of approx points are the MLPs')
sed '/^  spectra:/,/^    split/d' "$sweep" >"$T/lin.yaml"
drun 1 "$T/lin.yaml" -o "$T/lin.h5" -q --set model.approx=lin --set train.steps=40
check "model.approx lin: every loss equals PyTorch float64's f_lin GD replay to 1e-10" \
  "$PY" "$DS_SRC/tests/cnn_lin_sweep.py" "$DUMP" "$T/lin.yaml" "$T/lin.h5"
drun 2 "$sweep" -o "$T/b.h5" -q
check "-n 2 and -n 1 stores: every series equal bit for bit" same_points "$T/a.h5" "$T/b.h5"
# teams of 2 ranks (the samples split over the members, tests/cnn_team.sh; K's eigenproblem and the SVDs on the team's
# ScaLAPACK grid): equal to round-off, as the MLPs' teams (tests/teams.sh)
drun 3 "$sweep" -o "$T/t.h5" -q --set train.ranks_per_point=2
check "teams of 2 ranks: every series equal to 1e-10" "$PY" "$DS_SRC/tests/teams_compare.py" "$T/a.h5" "$T/t.h5"

drun 1 "$sweep" -o "$T/lam.h5" -q --set optimizer.lr_units=lambda0
check "lr_units lambda0: eta * lambda_0 = lr for both points" "$PY" - "$T/lam.h5" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["DS_SRC"], "python"))
import h5py
from dynsweep.store import read_points
pts = read_points(h5py.File(sys.argv[1], "r"))
ok = len(pts) == 2
for pid, ser in pts.items():
    s = {x[0]: x for x in ser}
    eta, lam = float(s["eta"][4][0]), float(s["ntk/top"][4][0][0])
    err = abs(eta * lam - 0.5) / 0.5
    print(f"point {pid}: eta {eta:.6g}, lambda_0 {lam:.6g}, |eta lambda_0 - 0.5|/0.5 = {err:.1e}")
    ok = ok and int(s["ntk/top"][3][0]) == 0 and err <= 1e-12
sys.exit(0 if ok else 1)
PYEOF

# ---- drain and resume: K_0 (kernel_change) and the batcher come back ----------
long=$T/long.yaml
sed -e 's/^train: {steps: 20}$/train: {steps: 20000}/' -e 's/^  every: 5$/  every: 500/' \
    -e 's/^    ntk: {every: 5}$/    ntk: {every: 500}/' -e 's/^    batch_ntk: {every: 5}$/    batch_ntk: {every: 500}/' \
    -e 's/^    layers: {every: 10}$/    layers: {every: 1000}/' -e 's/^    agop: {every: 10}$/    agop: {every: 1000}/' \
    -e 's/^optimizer: {type: gd, lr: 0.5}$/optimizer: {type: gd, lr: 0.05}/' "$sweep" >"$long"
[ "$(grep -cE 'steps: 20000|every: 500}|every: 1000}|^  every: 500$|lr: 0.05' "$long")" = 7 ] ||
  bad "long.yaml: sed did not change all 7 lines"
drun 1 "$long" -o "$T/lref.h5" -q
drain_run "$T/l.h5" 0.5 "$T/l1.log" -n 1 "$DYNSWEEP" run "$long" -o "$T/l.h5" --checkpoint-every 0.1
check "drain: exit 3 (got $RC)" test "$RC" -eq 3
drun 1 "$long" -o "$T/l.h5" -q 2>"$T/l2.log"
check "resume continues from a checkpoint" grep -q "from a checkpoint" "$T/l2.log"
check "resumed CNN sweep with NTK records equals the uninterrupted run bit for bit" \
  same_points "$T/lref.h5" "$T/l.h5"

# ---- activation spectra do not disturb training -------------------------------
# record.spectra.activations runs its own forward passes on the shared net
# (src/diag/cnnact.c): with it on, every other series of a run (model.approx
# none with a hidden layer and dropout 0.5, and quad) equals the run without it
# bit for bit.
sed -e '/^  spectra:/,/^    split/d' "$sweep" >"$T/plain.yaml"
for v in "model.hidden=8 model.dropout=0.5" "model.approx=quad"; do
  sets=()
  rm -f "$T/p0.h5" "$T/p1.h5"
  for kv in $v; do sets+=(--set "$kv"); done
  drun 1 "$T/plain.yaml" -o "$T/p0.h5" -q "${sets[@]}"
  drun 1 "$T/plain.yaml" -o "$T/p1.h5" -q "${sets[@]}" --set record.spectra.activations.every=3
  check "activations every 3 steps ($v): the other series equal the run without them bit for bit" \
    "$PY" - "$T/p0.h5" "$T/p1.h5" "$v" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["DS_SRC"], "python"))
import h5py, numpy as np
from dynsweep.store import read_points
a, b = (read_points(h5py.File(p, "r")) for p in sys.argv[1:3])
ok = sorted(a) == sorted(b) and len(a) == 2
for pid in a:
    A, B = ({s[0]: s for s in x[pid]} for x in (a, b))
    same = all(np.array_equal(np.asarray(A[k][3]), np.asarray(B[k][3])) and
               np.array_equal(np.asarray(A[k][4]), np.asarray(B[k][4])) for k in A)
    extra = sorted(set(B) - set(A))
    print(f"point {pid}: {len(A)} series equal: {same}; added {extra}")
    ok = ok and same and extra == ["activations/nonlinearity", "activations/sv/A1", "activations/sv/A2"] + (
        ["activations/sv/A3"] if "hidden" in sys.argv[3] else [])
sys.exit(0 if ok else 1)
PYEOF
done
report
