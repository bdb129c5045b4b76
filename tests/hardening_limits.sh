#!/usr/bin/env bash
# hardening_limits.sh -- hostile sweep files are refused quickly, with exit
# code 2 and a file:line:col message, by `dynsweep plan` (the same parser
# `run` and `submit` use): YAML alias expansion ("billion laughs", with and
# without a grid), deep nesting, too many nodes, huge grids (a product of
# axes past the point limit, one that overflows 64 bits, too many axes, a
# range with a huge num). Each must fail within 20 s and 2 GB of memory.
. "$(dirname "$0")/lib.sh"

# A memory cap, except under AddressSanitizer (its shadow memory reserves
# terabytes of address space; tests/sanitize.sh).
vlimit=2000000
# (ldd's output captured first: with pipefail, `ldd | grep -q` fails when
# grep exits before ldd has written everything and ldd gets SIGPIPE, which
# left the cap on under ASan in one CI run)
case "$(ldd "$(dirname "$DYNSWEEP")/libexec/dynsweep" 2>/dev/null || true)" in *libasan*) vlimit=unlimited ;; esac

# refuse NAME FILE EXPECTED-SUBSTRING
refuse() {
  local what=$1 f=$2 want=$3 rc=0
  ( ulimit -v "$vlimit"; timeout 20 "$DYNSWEEP" plan "$f" ) >"$T/out" 2>"$T/err" || rc=$?
  if [ "$rc" -ne 2 ]; then
    bad "$what: exit $rc, want 2; stderr: $(head -c 400 "$T/err")"
  elif ! grep -qF -- "$want" "$T/err"; then
    bad "$what: stderr lacks '$want': $(head -c 400 "$T/err")"
  elif ! grep -qE "^$f:[0-9]+:[0-9]+: " "$T/err"; then
    bad "$what: message is not 'FILE:LINE:COL: ...': $(head -c 400 "$T/err")"
  else
    ok "$what"
  fi
}

base='name: evil
loss: {reduction: mean}
'

# ---- billion laughs: 9 levels of 9 aliases = 387,420,489 strings if expanded
{
  printf '%s' "$base"
  printf 'lol0: &a0 "lol"\n'
  for i in 1 2 3 4 5 6 7 8 9; do
    printf 'lol%d: &a%d [' "$i" "$i"
    for j in 1 2 3 4 5 6 7 8 9; do printf '*a%d%s' $((i - 1)) "$([ $j -lt 9 ] && echo ', ')"; done
    printf ']\n'
  done
} >"$T/laughs.yaml"
refuse "billion laughs" "$T/laughs.yaml" "anchors and aliases are not supported"

# the same inside the grid, where expansion would multiply axis values
{
  printf '%s' "$base"
  printf 'model: {width: 8}\ngrid:\n  lr: &v [0.1, 0.2, 0.3]\n  model.init_scale: [*v, *v, *v]\n'
} >"$T/laughs_grid.yaml"
refuse "alias in a grid axis" "$T/laughs_grid.yaml" "anchors and aliases are not supported"

# an alias with no anchor at all
printf '%sgrid:\n  width: [*nowhere, 4]\n' "$base" >"$T/alias_only.yaml"
refuse "alias without anchor" "$T/alias_only.yaml" "aliases are not supported"

# merge key with an anchor ("<<: *base"), the usual way to share settings
printf '%smodel: &m {width: 8}\ntrain:\n  <<: *m\n' "$base" >"$T/merge.yaml"
refuse "merge key" "$T/merge.yaml" "anchors and aliases are not supported"

# ---- expansion without aliases: nesting and node count
{ printf '%sgrid:\n  width: ' "$base"; head -c 5000 /dev/zero | tr '\0' '['; printf '1'
  head -c 5000 /dev/zero | tr '\0' ']'; printf '\n'; } >"$T/deep.yaml"
refuse "5000 nested lists" "$T/deep.yaml" "nesting too deep"

{ printf '%sgrid:\n  width: [' "$base"; seq -s ', ' 200001 | tr -d '\n'; printf ']\n'; } >"$T/nodes.yaml"
refuse "200001 list entries" "$T/nodes.yaml" "too large"

# ---- huge grids
printf '%sgrid:\n  width: {start: 1, stop: 1001, num: 1001}\n  lr: {start: 0.001, stop: 1.0, num: 1000}\n' \
  "$base" >"$T/grid_1e6.yaml"
refuse "1001 x 1000 grid" "$T/grid_1e6.yaml" "grid too large"

# 16 axes of 30 values: 30^16 = 4.3e23 points, past 2^63 (int64 overflow)
{
  printf '%sgrid:\n' "$base"
  awk 'BEGIN {
    n = split("model.width model.depth optimizer.lr model.init_scale data.noise data.n_train " \
              "data.n_test train.steps train.tol optimizer.momentum optimizer.weight_decay " \
              "optimizer.eps optimizer.beta1 optimizer.beta2 optimizer.alpha optimizer.rho", p, " ")
    for (k = 1; k <= n; k++) {
      printf "  %s: [", p[k]
      for (i = 1; i <= 30; i++)
        printf (p[k] ~ /width|depth|n_train|n_test|steps/ ? "%d%s" : "%.3f%s"),
               (p[k] ~ /width|depth|n_train|n_test|steps/ ? i + 1 : i / 100.0), (i < 30 ? ", " : "]\n")
    }
  }'
} >"$T/grid_overflow.yaml"
refuse "30^16 points (overflows int64)" "$T/grid_overflow.yaml" "grid too large"

# 17 axes, two values each: one axis more than DS_MAX_AXES (16)
{
  printf '%sgrid:\n' "$base"
  for p in model.width model.depth data.n_train data.n_test train.steps; do printf '  %s: [2, 3]\n' "$p"; done
  for p in optimizer.lr model.init_scale data.noise train.tol optimizer.momentum optimizer.weight_decay \
           optimizer.eps optimizer.beta1 optimizer.beta2 optimizer.alpha optimizer.rho \
           optimizer.initial_accumulator; do printf '  %s: [0.1, 0.2]\n' "$p"; done
} >"$T/grid_axes.yaml"
refuse "17 axes" "$T/grid_axes.yaml" "too many axes"

printf '%sgrid:\n  width: {start: 1, stop: 1000000000, num: 1000000000}\n' "$base" >"$T/grid_num.yaml"
refuse "range with num 1e9" "$T/grid_num.yaml" "num"

printf '%sgrid:\n  width: [8, 16]\n  replicas: 100000000\n' "$base" >"$T/grid_replicas.yaml"
refuse "1e8 replicas" "$T/grid_replicas.yaml" "replicas"

printf '%sgrid:\n  width: [8, 16]\n  replicas: 1000000\n' "$base" >"$T/grid_replicas2.yaml"
refuse "2 values x 1e6 replicas" "$T/grid_replicas2.yaml" "grid too large"

report
