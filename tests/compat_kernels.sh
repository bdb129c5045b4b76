#!/usr/bin/env bash
# compat_kernels.sh DYNSWEEP -- one line naming the kernels whose round-off the
# stores' values depend on (docs/performance.md: bitwise "only with the same
# code path, kernels and binary"): the OpenBLAS kernel and the tanh kernel that
# `dynsweep version` reports, and the map tiles' instruction set (src/nn/tile.c
# pass_isa: avx512 with avx512f+avx512dq+fma, avx2 with avx2+fma, else generic).
# tests/compat.sh compares with the stored references only on a host where this
# line is the one in tests/data/compat/MADE.
set -euo pipefail
v=$(env -u OPENBLAS_CORETYPE "$1" version 2>/dev/null || true)
blas=$(sed -n 's/^OpenBLAS kernel: \([A-Za-z0-9_]*\).*/\1/p' <<<"$v" | head -1)
tanh=$(sed -n 's/^tanh: \([^(]*\).*/\1/p' <<<"$v" | head -1 | sed 's/ *$//; s/ /_/g')
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { grep -qw "$1" <<<"$flags"; }
if has avx512f && has avx512dq && has fma; then isa=avx512
elif has avx2 && has fma; then isa=avx2
else isa=generic; fi
echo "blas=${blas:-?} tanh=${tanh:-?} tiles=$isa arch=$(uname -m)"
