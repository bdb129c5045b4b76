#!/usr/bin/env bash
# tools/test.sh -- set up, build and run the whole test suite (ctest), then the
# same suite again under AddressSanitizer + UBSan (tests/sanitize.sh: its own
# build in build-asan/, Slurm tests excluded; DS_SKIP_SANITIZE=1 skips it).
set -euo pipefail
. "$(dirname "$0")/setup.sh"
ds_install
ds_build
(cd "$DS_BUILD" && ctest --output-on-failure -j 2 "$@")
if [ "${DS_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "dynsweep test: the suite again under AddressSanitizer + UBSan (tests/sanitize.sh)"
  bash "$DS_ROOT/tests/sanitize.sh"
fi
