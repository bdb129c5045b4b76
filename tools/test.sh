#!/usr/bin/env bash
# tools/test.sh -- set up, build and run the whole test suite (ctest).
set -euo pipefail
. "$(dirname "$0")/setup.sh"
ds_install
ds_build
cd "$DS_BUILD"
ctest --output-on-failure -j 2 "$@"
