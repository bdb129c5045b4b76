#!/usr/bin/env bash
# bad_inputs.sh -- issue 11 item 3: every input is checked before any work.
# Broken data, init and reference files (real bytes, written by
# mk_bad_inputs), and sweep files that are a FIFO, a directory, a device or
# too large: `plan` exits 2 with the exact message, and `run` under
# `mpirun -n 2` exits 2 with the same message and creates neither the store
# nor its journal. Good inputs next to them still plan and run.
source "$(dirname "$0")/lib.sh"
unset OPENBLAS_CORETYPE DYNSWEEP_NO_REEXEC OMPI_MCA_rmaps_base_oversubscribe
export OPENBLAS_NUM_THREADS=1
# Every rank of these runs prints (rank 0) and stops through MPI_Finalize by
# itself with exit 2; mpirun then still takes its abnormal-exit path, whose
# SIGTERM-to-SIGKILL grace (odls_base_sigkill_timeout, 1 s) cost ~2 s per run
# (2.4 s against 0.4 s measured): 32 such runs, ~60 s of the test. The grace
# is for ranks still running, and there are none.
export OMPI_MCA_odls_base_sigkill_timeout=0
MK=${DS_BUILD:?DS_BUILD must point to the build tree}/tests/mk_bad_inputs
I=$T/in
mkdir -p "$I"
"$MK" "$I"
HEAD='name: bad-inputs
loss: {reduction: half_mean}
optimizer: {lr: 0.01}
train: {steps: 3}'
DATA='data: {kind: hdf5, path: in/good.h5, n_train: 10, n_test: 4}'
ncase=0

# plan_and_run NAME SWEEP-PATH EXPECTED: exit 2 and EXPECTED in stderr for both,
# and no STORE / STORE.journal after the run
plan_and_run() {
  local name=$1 sw=$2 want=$3 rc
  ncase=$((ncase + 1))
  rc=$(code timeout 60 "$DYNSWEEP" plan "$sw")
  if [ "$rc" = 2 ] && grep -qF -- "$want" "$T/err"; then ok "$name: plan exits 2 with the message"
  else bad "$name: plan exit $rc, stderr: $(head -c 600 "$T/err") -- want: $want"; fi
  rc=$(code timeout 60 mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sw" -o "$T/$name.store.h5" -q)
  if [ "$rc" = 2 ] && grep -qF -- "$want" "$T/err"; then ok "$name: run exits 2 with the message"
  else bad "$name: run exit $rc, stderr: $(head -c 600 "$T/err")"; fi
  check "$name: run created no store and no journal" \
    test ! -e "$T/$name.store.h5" -a ! -e "$T/$name.store.h5.journal"
}

# bad NAME 'YAML BODY (after the common head)' 'EXPECTED after "SWEEP:"'
bad_case() {
  local name=$1 body=$2 want=$3
  printf '%s\n%s\n' "$HEAD" "$body" >"$T/$name.yaml"
  plan_and_run "$name" "$T/$name.yaml" "$T/$name.yaml:$want"
}

M16='model: {depth: 2, width: 16, init: file, init_file: in'
LS='point 0 has depth 2 and layer sizes d_0..d_2 = 3, 16, 1)'
bad_case init_transposed "$DATA
$M16/init_transposed.h5}" \
  "6:53: model.init_file: $I/init_transposed.h5: dataset 'W1' is 3 x 16, expected 16 x 3 (W1 is d_1 x d_0; $LS"
bad_case init_missing_w2 "$DATA
$M16/init_missing_w2.h5}" \
  "6:53: model.init_file: $I/init_missing_w2.h5: no dataset 'W2' (W2 is d_2 x d_1; $LS"
bad_case init_not_hdf5 "$DATA
$M16/not_hdf5.h5}" \
  "6:53: model.init_file: $I/not_hdf5.h5: not an HDF5 file (or unreadable) (W1 is d_1 x d_0; $LS"
bad_case init_nan "$DATA
$M16/init_nan.h5}" \
  "6:53: model.init_file: $I/init_nan.h5: dataset 'W2' has nan at [0, 7] (row, column from 0), expected finite numbers (W2 is d_2 x d_1; $LS"
bad_case init_width_axis "$DATA
$M16/init_ok.h5}
grid: {width: [16, 8]}" \
  "6:53: model.init_file: $I/init_ok.h5: dataset 'W1' is 16 x 3, expected 8 x 3 (W1 is d_1 x d_0; point 1 has depth 2 and layer sizes d_0..d_2 = 3, 8, 1)"
bad_case init_depth_axis "$DATA
$M16/init_ok.h5}
grid: {depth: [2, 3]}" \
  "6:53: model.init_file: $I/init_ok.h5: dataset 'W2' is 1 x 16, expected 16 x 16 (W2 is d_2 x d_1; point 1 has depth 3 and layer sizes d_0..d_3 = 3, 16, 16, 1)"
bad_case init_bias_missing "$DATA
model: {depth: 2, width: 16, bias: true, init: file, init_file: in/init_ok.h5}" \
  "6:65: model.init_file: $I/init_ok.h5: no dataset 'b1', but model.bias is true: the file must hold b1..b2 (b_l has d_l entries; missing biases are not filled with zeros)"
bad_case init_scale_file "$DATA
model: {depth: 2, width: 16, init: file, init_file: in/init_ok.h5, init_scale: 0.5}" \
  "6:80: model.init_scale: not applied with model.init: file (the weights are used exactly as stored), got 0.5; remove init_scale (or use 1) and scale the weights in the file"
bad_case agop_shape "$DATA
record: {spectra: {agop: {every: 1}, agop_reference: in/agop_2x2.h5}}" \
  "6:54: record.spectra.agop_reference: $I/agop_2x2.h5: dataset 'G' is 2 x 2, expected 3 x 3 (G is data.d_in x data.d_in = 3 x 3 for point 0)"
bad_case hdf5_x_strings "data: {kind: hdf5, path: in/x_strings.h5, n_train: 10, n_test: 4}" \
  "5:26: data.path: $I/x_strings.h5: dataset 'X' holds strings, expected numbers (integer or float)"
bad_case hdf5_x_nan "data: {kind: hdf5, path: in/x_nan.h5, n_train: 10, n_test: 4}" \
  "5:26: data.path: $I/x_nan.h5: dataset 'X' has nan at [4, 1] (row, column from 0), expected finite numbers"
IDXL='labels_path: in/labels.idx, n_train: 5, n_test: 2'
bad_case idx_truncated "data: {kind: idx, path: in/images_truncated.idx, $IDXL}" \
  "5:25: data.path: $I/images_truncated.idx: truncated: image 10 of 10 is incomplete"
bad_case idx_header_size "data: {kind: idx, path: in/images_long.idx, $IDXL}" \
  "5:25: data.path: $I/images_long.idx: the header says 10 images of 4 bytes, but the file has more data after them (header and size disagree)"
bad_case idx_nan "data: {kind: idx, path: in/images_nan.idx, $IDXL}" \
  "5:25: data.path: $I/images_nan.idx: image 7, value 4 is nan, expected a finite number"
bad_case csv_ragged "data: {kind: csv, path: in/ragged.csv, n_train: 1, n_test: 0}" \
  "5:25: data.path: $I/ragged.csv:4: expected 3 columns, got 2"
bad_case csv_nul "data: {kind: csv, path: in/nul.csv, n_train: 1, n_test: 0}" \
  "5:25: data.path: $I/nul.csv:3: NUL byte (binary data) at byte 15, expected text"
bad_case csv_nan "data: {kind: csv, path: in/nan.csv, n_train: 1, n_test: 0}" \
  "5:25: data.path: $I/nan.csv:2: column 2 is 'nan', expected a finite number"
bad_case libsvm_index_range "data: {kind: libsvm, path: in/index0.svm, n_train: 1, n_test: 0}" \
  "5:28: data.path: $I/index0.svm:2: feature index 0 out of range (indices start at 1)"
bad_case empty_test_split "data: {kind: libsvm, path: in/good.svm, n_train: 2, n_test: 1, test_fraction: 0.1}" \
  "5:28: data.path: $I/good.svm: n_test = 1 but the test split is empty (test_fraction 0.1 of 5 samples is 0 samples); raise data.test_fraction or set data.n_test: 0"
bad_case libsvm_duplicate "data: {kind: libsvm, path: in/dup.svm, n_train: 1, n_test: 0}" \
  "5:28: data.path: $I/dup.svm:2: feature index 1 given twice, expected each index at most once per line"

# sweep files that are not regular files, or too large
mkfifo "$T/fifo.yaml"
plan_and_run fifo "$T/fifo.yaml" "$T/fifo.yaml: is a FIFO (named pipe), not a regular file"
mkdir "$T/dir.yaml"
plan_and_run directory "$T/dir.yaml" "$T/dir.yaml: is a directory, not a regular file"
plan_and_run device /dev/zero "/dev/zero: is a character device, not a regular file"
truncate -s $((16 * 1024 * 1024 + 1)) "$T/huge.yaml"
plan_and_run oversized "$T/huge.yaml" "$T/huge.yaml: too large (16777217 bytes, limit 16777216 = 16 MiB)"
printf 'name: nul\n\0loss: {reduction: sum}\n' >"$T/nul.yaml"
plan_and_run nul_byte "$T/nul.yaml" "$T/nul.yaml:2: NUL byte at byte 11: a sweep file is YAML text"
# a data file that is a FIFO is refused by name, without blocking
bad_case data_fifo "data: {kind: csv, path: fifo.yaml, n_train: 1, n_test: 0}" \
  "5:25: data.path: '$T/fifo.yaml' is a FIFO (named pipe), not a regular file; give a data file"

# the sweep-file cases of tests/bad_sweeps/ that issue 11 names: run as well
for f in yaml_tag yaml_tag_map null_tilde null_word null_empty width_overflow; do
  sw=$DS_SRC/tests/bad_sweeps/$f.yaml
  first=$(head -n 1 "$sw")
  cp "$sw" "$T/$f.yaml"
  plan_and_run "$f" "$T/$f.yaml" "$T/$f.yaml:${first#"# expect: "}"
done

# good inputs beside the bad ones: plan and a short run succeed
ncase=$((ncase + 1))
printf '%s\n%s\n%s\ngrid: {width: [16]}\n' "$HEAD" "$DATA" "$M16/init_ok.h5}" >"$T/good.yaml"
check "good init file and data: plan exits 0" test "$(code "$DYNSWEEP" plan "$T/good.yaml")" = 0
check "good init file and data: run exits 0" \
  test "$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$T/good.yaml" -o "$T/good.h5" -q)" = 0
printf '%s\ndata: {kind: idx, path: in/images_ok.idx, %s}\n' "$HEAD" "$IDXL" >"$T/good_idx.yaml"
check "good IDX files: plan exits 0" test "$(code "$DYNSWEEP" plan "$T/good_idx.yaml")" = 0
printf '%s\nmodel: {init_std: 5e-324}\n' "$HEAD" >"$T/subnormal.yaml"
check "subnormal 5e-324 is a valid double: plan exits 0" \
  test "$(code "$DYNSWEEP" plan "$T/subnormal.yaml")" = 0
# the store records its inputs' content; a changed input is named on resume
# and its new hash recorded
cp "$I/good.svm" "$T/d.svm"
printf '%s\ndata: {kind: libsvm, path: d.svm, n_train: 3, n_test: 0}\ngrid: {lr: [0.01, 0.02]}\n' \
  "$HEAD" >"$T/ih.yaml"
check "inputs: first run exits 0" test "$(code drun 2 "$T/ih.yaml" -o "$T/ih.h5" -q)" = 0
h0=$(h5dump -a inputs_hash "$T/ih.h5" | sed -n 's/.*(0): "\([0-9a-f]*\)".*/\1/p')
check "inputs: the store records inputs_hash" test ${#h0} = 16
size=$(stat -c %s "$T/d.svm")
h5dump -a inputs "$T/ih.h5" >"$T/attr"
check "inputs: the store lists the data file, its size and hash" \
  grep -qP "^   \\(0\\): \"\\Q$T/d.svm\\E\\t$size\\t[0-9a-f]{16}$" "$T/attr"
echo "0 1:9" >>"$T/d.svm"
sed -i 's/lr: \[0.01, 0.02\]/lr: [0.01, 0.02, 0.03]/' "$T/ih.yaml"
check "inputs: resume after the data changed exits 0" test "$(code drun 2 "$T/ih.yaml" -o "$T/ih.h5" -q)" = 0
check "inputs: the changed file is named" grep -qE \
  "^dynsweep: warning: input $T/d.svm changed since the store was created \(hash [0-9a-f]{16} -> [0-9a-f]{16}\); finished points used the old content$" "$T/err"
h1=$(h5dump -a inputs_hash "$T/ih.h5" | sed -n 's/.*(0): "\([0-9a-f]*\)".*/\1/p')
check "inputs: the new hash is recorded" test "${#h1}" = 16 -a "$h1" != "$h0"
rc=$(code drun 2 "$T/ih.yaml" -o "$T/ih.h5" -q)
check "inputs: a run after recording is quiet about inputs" bash -c "[ $rc = 0 ] && ! grep -q 'changed since' '$T/err'"
echo "bad_inputs: $ncase cases"
report
