# tests/repro.sh STUDY -- run the reduced form of the study reproduction
# sweeps/repro/<STUDY>*.yaml (tests/repro_reduce.py: fewer points and steps)
# on 3 ranks and check the paper's qualitative claim with the numbers from the
# store (tools/repro_figures.py check STUDY --reduced). ctest: repro_<STUDY>.
source "$(dirname "$0")/lib.sh"
STUDY=${1:?usage: repro.sh STUDY}
if [ "$HAVE_H5PY" != 1 ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "SKIP: needs /usr/bin/python3 with h5py, numpy and yaml"; exit 0
fi
if { [ "$STUDY" = 004 ] || [ "$STUDY" = 003_cnn ] || [ "$STUDY" = 002_cnn ]; } && [ ! -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "SKIP: Fashion-MNIST not installed (dataset-fashion-mnist)"; exit 0
fi
names=$("$PY" "$DS_SRC/tests/repro_reduce.py" "$STUDY" "$T")
for n in $names; do
  start=$(date +%s%N)
  if drun 3 "$T/$n.yaml" -o "$T/$n.h5" >"$T/$n.log" 2>&1; then
    ok "$n: reduced sweep ran ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
    # the analysis commands re-read the stored sweep without its data files
    # (001's balanced init once failed there: the data dims were unknown)
    check "$n: dynsweep ls and export read the store" bash -c \
      "'$DYNSWEEP' ls '$T/$n.h5' > /dev/null && '$DYNSWEEP' export '$T/$n.h5' -o '$T/$n.csv'"
  else
    bad "$n: reduced sweep failed"; cat "$T/$n.log" >&2
  fi
done
if "$PY" "$DS_SRC/tools/repro_figures.py" check "$STUDY" --dir "$T" --reduced >"$T/check.out" 2>&1; then
  ok "study $STUDY: qualitative claims hold"
else
  bad "study $STUDY: qualitative claims"
fi
cat "$T/check.out"
report
