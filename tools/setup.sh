#!/usr/bin/env bash
# tools/setup.sh -- install what dynsweep needs (Debian 12 packages) and build it.
# Sourced by tools/demo.sh and tools/test.sh; can also be run on its own.
# Installs with apt-get when run as root; otherwise lists what is missing.
set -euo pipefail
DS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DS_BUILD=${DS_BUILD:-$DS_ROOT/build}

# What building dynsweep and running the demo need (tools/demo.sh) ...
DS_PACKAGES=(build-essential cmake pkg-config
  openmpi-bin libopenmpi-dev
  libscalapack-openmpi-dev libopenblas-dev
  libhdf5-openmpi-dev hdf5-tools
  libyaml-dev zlib1g-dev librandom123-dev libsleef-dev libxsmm-dev)
# ... and what the test suite needs on top (tools/test.sh: ds_install test)
DS_TEST_PACKAGES=(
  python3 python3-numpy python3-h5py python3-yaml  # store checks, analysis tools
  dataset-fashion-mnist   # real data: Fashion-MNIST IDX files (seed 003/004 studies)
  python3-torch           # reference trajectories (tests/torch_reference.py)
  python3-matplotlib      # tools/dynsweep-report figures
  python3-plotly          # tools/dynsweep-report interactive maps and loss curves (inlined, offline)
  python3-pandas python3-xarray  # python/dynsweep: summary() DataFrame, to_xarray() (docs/analysis.md)
  chromium                # renders the report in a test (headless)
  slurmctld slurmd slurm-client munge   # tests/slurm_*.sh start a local cluster
  slurmdbd mariadb-server)  # its job accounting, so sacct works (tests/slurm_chain.sh)

# ds_missing_packages [test]: the packages of the list that are not installed
ds_missing_packages() {
  local p missing=() want=("${DS_PACKAGES[@]}")
  [ "${1:-}" = test ] && want+=("${DS_TEST_PACKAGES[@]}")
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

# ds_install [test]: install what is missing (the demo's list; with "test" also the suite's)
ds_install() {
  local missing
  missing=$(ds_missing_packages "${1:-}")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "dynsweep setup: these Debian packages are missing: $missing" >&2
    echo "dynsweep setup: install them as root:  apt-get install $missing" >&2
    echo "dynsweep setup: (or run this command again as root and it installs them)" >&2
    return 1
  fi
  echo "dynsweep setup: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  # RUNLEVEL=1: the packages do not start their system daemons (munge, slurm,
  # mariadb); the tests start their own throw-away ones
  RUNLEVEL=1 apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

ds_build() {
  cmake -S "$DS_ROOT" -B "$DS_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$DS_BUILD" -j "$(nproc)" 2>&1 | grep -E '(error|warning):|Error [0-9]' || true
  test -x "$DS_BUILD/dynsweep" || { echo "dynsweep setup: build failed" >&2; return 1; }
}

# mpirun flags that work as root and with more ranks than cores.
ds_mpirun_flags() {
  # -q: no Open MPI banner after a drain (exit 3) or a refused input (exit 2),
  # so dynsweep's own message is the last thing on the terminal
  local f="-q --oversubscribe"
  [ "$(id -u)" -eq 0 ] && f="$f --allow-run-as-root"
  echo "$f"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ds_install && ds_build && echo "dynsweep setup: built $DS_BUILD/dynsweep"
fi
