#!/usr/bin/env bash
# Installs the build into a scratch prefix and uses it as a newcomer would, WITHOUT LD_LIBRARY_PATH
# (the installed programs must find libshoal.so through their RUNPATH): runs bin/shoal-info, and
# bin/shoal-info under bin/shoalrun; then builds the example out of tree against the installed copy
# and runs it: once through CMake (find_package(shoal)) and once through pkg-config; then an NVSHMEM-spelled
# program through pkg-config shoal-nvshmem, and an OpenSHMEM program through the installed oshcc, oshc++ and oshrun.
# Where nvcc is found, CUDA programs too, each run on 2 PEs (a kernel on GPUs, the host API on host-memory PEs):
# device_ring.cu through `pkg-config shoal`, nvshmem_ring.cu through `pkg-config shoal-nvshmem`, an OpenSHMEM
# program compiled as CUDA through `pkg-config shoal-shmem`, and both .cu programs through find_package(shoal)
# (tests/install/cuda_consumer) -- the .pc files' Libs must suit nvcc as well as cc and c++.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
unset LD_LIBRARY_PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo "== $*"; }

step "cmake --install $build_dir --prefix <tmp>/prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in include/shoal/shoal.h include/shoal/world.hpp bin/shoalrun bin/shoal-info bin/shoal-bench; do
  [[ -e "$prefix/$f" ]] || { echo "missing after install: $f"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name 'libshoal.so' | head -1)")
[[ -n "$libdir" ]] || { echo "libshoal.so not installed"; exit 1; }
[[ -f "$libdir/pkgconfig/shoal.pc" ]] || { echo "shoal.pc not installed"; exit 1; }

# 1. The installed programs start from the prefix, wherever it is.
for prog in shoal-info shoal-bench; do
  runpath=$(readelf -d "$prefix/bin/$prog" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [[ $runpath == *'$ORIGIN'* ]] || { echo "bin/$prog: no RUNPATH relative to \$ORIGIN (got '$runpath')"; exit 1; }
done
step "bin/shoal-info"
"$prefix/bin/shoal-info" >"$work/info.txt" || { cat "$work/info.txt"; echo "bin/shoal-info failed"; exit 1; }
grep -qi "shoal" "$work/info.txt"
step "bin/shoal-bench --help"
"$prefix/bin/shoal-bench" --help >/dev/null
step "bin/shoalrun -n 2 bin/shoal-info"
out=$("$prefix/bin/shoalrun" -n 2 --timeout 60 -- "$prefix/bin/shoal-info")
grep -q '^\[1\] ' <<<"$out" || { echo "$out"; echo "no output from PE 1 of shoal-info"; exit 1; }

# 2. CMake package
step "examples/hello through find_package(shoal)"
cmake -S "$source_dir/examples/hello" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
out=$("$prefix/bin/shoalrun" -n 2 --timeout 60 -- "$work/cmake-build/hello")
echo "$out"
grep -q "ring check passed on 2 PEs" <<<"$out"

# 3. pkg-config, compiled as C11; its Libs carry the RUNPATH
step "examples/hello through pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Werror "$source_dir/examples/hello/hello.c" $(pkg-config --cflags --libs shoal) -o "$work/hello-pc"
out=$("$prefix/bin/shoalrun" -n 3 --timeout 60 -- "$work/hello-pc")
echo "$out"
grep -q "ring check passed on 3 PEs" <<<"$out"

# 4. An NVSHMEM program through pkg-config shoal-nvshmem (the compat headers; CUDA's headers as NVSHMEM needs)
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
if [[ -f "$cuda_inc/cuda.h" ]]; then
  step "tests/compat/nv_host_c.c through pkg-config shoal-nvshmem"
  [[ -f "$libdir/pkgconfig/shoal-nvshmem.pc" ]] || { echo "shoal-nvshmem.pc not installed"; exit 1; }
  cc -std=c11 -Wall -Werror "$source_dir/tests/compat/nv_host_c.c" -I"$cuda_inc" \
    $(pkg-config --cflags --libs shoal-nvshmem) -o "$work/nv-host-c"
  out=$(SHOAL_BACKEND=host "$prefix/bin/shoalrun" -n 2 --timeout 60 -- "$work/nv-host-c")
  echo "$out"
  grep -q "nv_host_c: OK" <<<"$out"
fi
# 5. CUDA programs built by nvcc through each .pc file and through find_package(shoal); no LD_LIBRARY_PATH.
nvcc_bin=$(command -v nvcc || true)
[[ -z $nvcc_bin && -x ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc ]] && nvcc_bin=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [[ -n $nvcc_bin ]]; then
  run2() {  # EXE EXPECTED: runs EXE on 2 PEs and checks its output
    local out
    out=$("$prefix/bin/shoalrun" -n 2 --timeout 60 -- "$1") || { echo "$out"; echo "$1 failed"; exit 1; }
    echo "$out"
    grep -q "$2" <<<"$out" || { echo "no '$2' in the output of $1"; exit 1; }
  }
  nvcc_flags=(-arch=sm_90 -Werror all-warnings)
  step "tests/install/device_ring.cu through nvcc \$(pkg-config --cflags --libs shoal)"
  "$nvcc_bin" "${nvcc_flags[@]}" "$source_dir/tests/install/device_ring.cu" $(pkg-config --cflags --libs shoal) \
    -o "$work/device-ring-pc"
  run2 "$work/device-ring-pc" "device_ring: OK on 2 PEs"
  step "tests/install/nvshmem_ring.cu through nvcc \$(pkg-config --cflags --libs shoal-nvshmem)"
  "$nvcc_bin" "${nvcc_flags[@]}" "$source_dir/tests/install/nvshmem_ring.cu" $(pkg-config --cflags --libs shoal-nvshmem) \
    -o "$work/nvshmem-ring-pc"
  run2 "$work/nvshmem-ring-pc" "nvshmem_ring: OK on 2 PEs"
  step "tests/shmem/shmem_diff.c as CUDA through nvcc \$(pkg-config --cflags --libs shoal-shmem)"
  cp "$source_dir/tests/shmem/shmem_diff.c" "$work/shmem_diff.cu"
  "$nvcc_bin" "${nvcc_flags[@]}" "$work/shmem_diff.cu" $(pkg-config --cflags --libs shoal-shmem) -o "$work/shmem-cu"
  run2 "$work/shmem-cu" '^\[0\] done$'
  step "tests/install/cuda_consumer through find_package(shoal) (CUDA language, nvcc)"
  cmake -S "$source_dir/tests/install/cuda_consumer" -B "$work/cuda-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CUDA_COMPILER="$nvcc_bin" >/dev/null
  cmake --build "$work/cuda-build" >/dev/null
  run2 "$work/cuda-build/device_ring" "device_ring: OK on 2 PEs"
  run2 "$work/cuda-build/nvshmem_ring" "nvshmem_ring: OK on 2 PEs"
else
  echo "== no nvcc: the CUDA programs (nvcc through pkg-config and find_package) are not built"
fi

# 6. OpenSHMEM: the installed oshcc / oshc++ / oshrun (shmem.h, libshoal_shmem through shoal-shmem.pc)
step "tests/shmem/shmem_diff.c through bin/oshcc and bin/oshc++, run by bin/oshrun"
unset PKG_CONFIG_PATH
"$prefix/bin/oshcc" -std=c11 -Wall -Werror "$source_dir/tests/shmem/shmem_diff.c" -o "$work/shmem-c"
cp "$source_dir/tests/shmem/shmem_diff.c" "$work/shmem_diff.cc"
"$prefix/bin/oshc++" -std=c++20 -Wall -Werror "$work/shmem_diff.cc" -o "$work/shmem-cxx"
for exe in shmem-c shmem-cxx; do
  out=$("$prefix/bin/oshrun" -n 2 --timeout 60 -- "$work/$exe")
  grep -q '^\[0\] done$' <<<"$out" || { echo "$out"; echo "$exe did not finish"; exit 1; }
done
echo "install test ok"
