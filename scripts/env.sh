# Sourced by the scripts: finds nvcc where the CUDA toolkit usually lives, and keeps NVLink
# multicast off (the project's GPU machines must never use it).
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# Ninja's progress line with the seconds elapsed, so that a long compile shows the build is alive.
export NINJA_STATUS=${NINJA_STATUS:-"[%f/%t %es] "}
# The checkout's own Python (scripts/install_deps.sh makes it): CMake is configured with it, so the tests,
# the Python package and bench/plot.py use it, never the Python on PATH.
shoal_venv=${SHOAL_VENV:-$PWD/build/venv}
