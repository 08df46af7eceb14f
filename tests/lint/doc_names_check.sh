#!/usr/bin/env bash
# Every concrete API name that docs/host-api.md mentions (shoal_..., shoalx_..., no <T> pattern) is
# declared in include/shoal/, and docs/README.md links only to files that exist.
# Usage: doc_names_check.sh SOURCE_DIR
set -u
src=${1:?usage: doc_names_check.sh SOURCE_DIR}
bad=0
names=$(grep -oE '\bshoalx?_[a-z0-9_]+\b' "$src/docs/host-api.md" | sort -u)
for n in $names; do
  case $n in *_) continue ;; esac  # a prefix in prose ("shoal_", "shoal_put8..")
  if ! grep -rqE "\b$n\b" "$src/include/shoal"; then
    echo "docs/host-api.md names $n, which include/shoal/ does not declare"
    bad=1
  fi
done
for link in $(grep -oE '\]\([^)#]+' "$src/docs/README.md" | sed 's/^](//'); do
  [ -e "$src/docs/$link" ] || { echo "docs/README.md links to a missing $link"; bad=1; }
done
[ "$bad" -eq 0 ] && echo "docs/host-api.md: $(wc -w <<<"$names") names, all declared; docs/README.md links ok"
exit "$bad"
