#!/usr/bin/env bash
# codegen test: a program whose two translation units both use the device facade compiles WITHOUT
# -rdc and links against libshoal (each unit keeps its own __constant__ world). Compile and link
# only; on a GPU machine run the result with `shoalrun -n 2 <work dir>/facade_two_tu`.
# Usage: check_two_tu.sh <nvcc> <source root> <work dir> <libshoal.so>
set -euo pipefail
nvcc=$1
root=$2
work=$3
lib=$4
mkdir -p "$work"
flags=(-std=c++20 -arch=sm_90 -Werror all-warnings -I"$root/include")
"$nvcc" "${flags[@]}" -c "$root/tests/codegen/facade_tu_a.cu" -o "$work/facade_tu_a.o"
"$nvcc" "${flags[@]}" -c "$root/tests/codegen/facade_tu_b.cu" -o "$work/facade_tu_b.o"
"$nvcc" -arch=sm_90 "$work/facade_tu_a.o" "$work/facade_tu_b.o" -o "$work/facade_two_tu" \
  -Xlinker "$lib" -Xlinker -rpath -Xlinker "$(dirname "$lib")"
# each unit registered its own update function and owns its own world copy
for o in facade_tu_a facade_tu_b; do
  nm "$work/$o.o" | grep -c ' U shoal_detail_register_device_facade' >/dev/null || {
    echo "FAIL: $o.o does not register with libshoal"
    exit 1
  }
done
echo "codegen: two-TU facade program built without -rdc: $work/facade_two_tu"
