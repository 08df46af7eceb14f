#!/usr/bin/env bash
# Calling an NVSHMEM function shoal does not provide fails at compile time, with a message naming the function;
# and the same program without that call compiles (the error appears only when used). Host C and C++ (fast).
# Usage: not_provided_check.sh <source root> <cuda include dir> <C compiler> <C++ compiler>
set -euo pipefail
root=$1 cuda_inc=$2 cc=$3 cxx=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-I"$root/include/compat/nvshmem" -I"$root/include" -I"$cuda_inc" -fsyntax-only)
name=$(awk '!/^#/ && NF {print $1; exit}' "$root/codegen/nvshmem_not_provided.txt")
[ -n "$name" ] || { echo "no not-provided function listed"; exit 1; }
printf '#include <nvshmem.h>\nint main(void) {\n#ifdef USE_IT\n  %s(0);\n#endif\n  nvshmem_init();\n  return 0;\n}\n' \
  "$name" > "$work/t.c"
for compiler in "$cc -std=c11" "$cxx -std=c++17 -x c++"; do
  # shellcheck disable=SC2086
  $compiler "${flags[@]}" "$work/t.c" || { echo "FAIL: $compiler: the program without the call does not compile"; exit 1; }
  # shellcheck disable=SC2086
  if $compiler "${flags[@]}" -DUSE_IT "$work/t.c" 2> "$work/err"; then
    echo "FAIL: $compiler: calling $name compiled"; exit 1
  fi
  grep -q "$name.*not provided by shoal" "$work/err" || { echo "FAIL: $compiler: message lacks the name:"; cat "$work/err"; exit 1; }
done
echo "OK: $name is refused at compile time, naming it"
