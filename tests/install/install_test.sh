#!/usr/bin/env bash
# Installs the build into a scratch prefix and uses it as a newcomer would, WITHOUT LD_LIBRARY_PATH
# (the installed programs must find libshoal.so through their RUNPATH): runs bin/shoal-info, and
# bin/shoal-info under bin/shoalrun; then builds the example out of tree against the installed copy
# and runs it: once through CMake (find_package(shoal)) and once through pkg-config; then an NVSHMEM-spelled
# program through pkg-config shoal-nvshmem, and an OpenSHMEM program through the installed oshcc, oshc++ and oshrun.
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
# 5. OpenSHMEM: the installed oshcc / oshc++ / oshrun (shmem.h, libshoal_shmem through shoal-shmem.pc)
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
