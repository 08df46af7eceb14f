#!/usr/bin/env bash
# The README's C example compiles as C11 and as C++20 against the build tree, links with libshoal
# and runs on 2 PEs. Usage: readme_snippet_test.sh SOURCE_DIR LIBSHOAL SHOALRUN
set -euo pipefail
src=$1
lib=$2
shoalrun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The first ```c block of README.md.
awk '/^```c$/ { on = 1; next } on && /^```/ { exit } on { print }' "$src/README.md" >"$work/snippet.c"
grep -q shoal_init "$work/snippet.c" || { echo "no \`\`\`c block with shoal_init in README.md"; exit 1; }
libdir=$(dirname "$lib")
link=(-L"$libdir" -Wl,-rpath,"$libdir" -lshoal)
echo "== as C11"
cc -std=c11 -Wall -Werror -I"$src/include" "$work/snippet.c" "${link[@]}" -o "$work/snippet-c"
echo "== as C++20"
c++ -std=c++20 -Wall -Werror -I"$src/include" -x c++ "$work/snippet.c" -x none "${link[@]}" -o "$work/snippet-cxx"
for prog in snippet-c snippet-cxx; do
  echo "== $prog on 2 PEs"
  "$shoalrun" -n 2 --timeout 60 -- "$work/$prog"
done
echo "README snippet ok"
