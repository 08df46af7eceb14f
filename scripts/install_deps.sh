#!/usr/bin/env bash
# Installs what building and testing shoal needs on a fresh Debian/Ubuntu machine (apt + pip).
# The CUDA toolkit (nvcc) is optional: without it shoal builds its host backend only.
# SHOAL_WITH_PLOTS=1 also installs matplotlib (for bench/plot.py).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config python3 python3-dev python3-pip libgtest-dev libgmock-dev libfmt-dev libcli11-dev clang-format
      libucx-dev ucx-utils libopenmpi-dev openmpi-bin)  # OpenMPI: OSHMEM (oshcc, oshrun) for tests/shmem
[[ "${SHOAL_WITH_PLOTS:-0}" == 1 ]] && pkgs+=(python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "== install_deps: apt-get update (quiet; takes a minute)"
  $sudo apt-get update -qq
  echo "== install_deps: apt-get install ${missing[*]} (quiet; takes a few minutes)"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  echo "== install_deps: done"
else
  echo "== install_deps: all of ${pkgs[*]} already installed"
fi

# The Python package (SHOAL_BUILD_PYTHON, on in the ci preset) builds with nanobind and is tested with
# pytest and numpy; scikit-build-core is what `pip install .` builds the wheel with. From PyPI, with pip.
py_missing=()
for m in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy pytest:pytest; do
  python3 -c "import ${m%%:*}" >/dev/null 2>&1 || py_missing+=("${m#*:}")
done
if ((${#py_missing[@]})); then
  echo "== install_deps: pip install ${py_missing[*]}"
  # Debian's python3 is externally managed (PEP 668): fall back to --break-system-packages there.
  python3 -m pip install -q "${py_missing[@]}" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "${py_missing[@]}"
else
  echo "== install_deps: nanobind, scikit-build-core, numpy and pytest already installed"
fi
