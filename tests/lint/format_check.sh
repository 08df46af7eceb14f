#!/usr/bin/env bash
# Fails if clang-format (repo .clang-format) would change any tracked C/C++/CUDA file.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 1; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout; nothing to check"; exit 0; }
mapfile -t files < <(git ls-files '*.cc' '*.hpp' '*.h' '*.cu' '*.cuh' '*.c')
bad=()
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'clang-format would change:\n'; printf '  %s\n' "${bad[@]}"
  echo "fix with: clang-format -i <files>"
  exit 1
fi
echo "format ok: ${#files[@]} files"
