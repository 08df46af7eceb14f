#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs the example out of tree against
# the installed copy: once through CMake (find_package(shoal)) and once through pkg-config.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in include/shoal/shoal.h include/shoal/world.hpp bin/shoalrun bin/shoal-info bin/shoal-bench; do
  [[ -e "$prefix/$f" ]] || { echo "missing after install: $f"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name 'libshoal.so' | head -1)")
[[ -n "$libdir" ]] || { echo "libshoal.so not installed"; exit 1; }
[[ -f "$libdir/pkgconfig/shoal.pc" ]] || { echo "shoal.pc not installed"; exit 1; }

# 1. CMake package
cmake -S "$source_dir/examples/hello" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
out=$(LD_LIBRARY_PATH="$libdir" "$prefix/bin/shoalrun" -n 2 --timeout 60 -- "$work/cmake-build/hello")
echo "$out"
grep -q "ring check passed on 2 PEs" <<<"$out"

# 2. pkg-config, compiled as C11
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Werror "$source_dir/examples/hello/hello.c" $(pkg-config --cflags --libs shoal) -o "$work/hello-pc"
out=$(LD_LIBRARY_PATH="$libdir" "$prefix/bin/shoalrun" -n 3 --timeout 60 -- "$work/hello-pc")
echo "$out"
grep -q "ring check passed on 3 PEs" <<<"$out"
echo "install test ok"
