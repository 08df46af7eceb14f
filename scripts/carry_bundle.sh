#!/usr/bin/env bash
# Makes the small bundles that travel to the GPU machine (it has no package registry, and a call carries
# 64 MiB at most, the working tree included). Run here, where pip reaches PyPI; the bundles land in DIR
# (default .whl/, which git ignores) and are named in the run's carry list.
#
#   scripts/carry_bundle.sh ucx [DIR]      libucx-cu13 (UCX with CUDA, for the proxy transport), 43 MB wheel ->
#                                          DIR/ucx-<version>.tar.xz (~7 MB): no static archives, no io_demo,
#                                          the .so copies made links. Use: scripts/gpu.sh --ucx-bundle DIR/ucx-*.tar.xz
#   scripts/carry_bundle.sh nvshmem [DIR]  nvidia-nvshmem-cu13 3.8.0 (the newest NVSHMEM), 182 MB wheel ->
#                                          DIR/nvshmem-<version>.tar.xz (~48 MB): headers, the host library,
#                                          the static device library and the bootstrap plugins; no bitcode and
#                                          no network transports. Use: scripts/gpu.sh --nvshmem-bundle DIR/nvshmem-*.tar.xz
#
# The two together with the working tree come close to the 64 MiB: carry them in separate calls if the
# tree has grown.
set -euo pipefail
what=${1:-}
dir=${2:-.whl}
[[ $what == ucx || $what == nvshmem ]] || { echo "usage: $0 ucx|nvshmem [DIR]" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip_get() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$work/wheel" "$1"
  ls "$work"/wheel/*.whl
}
if [[ $what == ucx ]]; then
  whl=$(pip_get libucx-cu13)
  mkdir "$work/tree"
  python3 -m zipfile -e "$whl" "$work/tree"
  find "$work/tree" \( -name '*.a' -o -name '*.la' \) -delete
  rm -f "$work/tree/libucx/bin/io_demo"
  # zip has no links: libX.so and libX.so.0 arrive as copies of libX.so.0.0.0.
  while IFS= read -r real; do
    d=$(dirname "$real") b=$(basename "$real")
    for l in "$d/${b%%.so.*}.so" "$d/${b%%.so.*}.so.0"; do
      if [[ -f $l && ! -L $l ]] && cmp -s "$l" "$real"; then ln -sf "$b" "$l"; fi
    done
  done < <(find "$work/tree" -name '*.so.*.*.*' -type f)
  version=$(cat "$work/tree/libucx/UCX_WHEEL_VERSION.txt" 2>/dev/null || basename "$whl" | cut -d- -f2)
  out=$dir/ucx-$version.tar.xz
  tar -cJf "$out" -C "$work/tree" .
else
  whl=$(pip_get nvidia-nvshmem-cu13==3.8.0)
  mkdir "$work/tree"
  (cd "$work/tree" && python3 - "$whl" <<'PY'
import sys, zipfile
keep = ("nvidia/nvshmem/include/", "nvidia/nvshmem/lib/libnvshmem_host.so", "nvidia/nvshmem/lib/libnvshmem_device.a",
        "nvidia/nvshmem/lib/nvshmem_bootstrap_")
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(members=[n for n in z.namelist() if n.startswith(keep)])
PY
  )
  # CMake's find_library looks for libnvshmem_host.so: the wheel ships only the versioned name.
  ln -s libnvshmem_host.so.3 "$work/tree/nvidia/nvshmem/lib/libnvshmem_host.so"
  out=$dir/nvshmem-$(basename "$whl" | cut -d- -f2).tar.xz
  tar -cJf "$out" -C "$work/tree/nvidia" nvshmem
fi
echo "$out ($(du -h "$out" | cut -f1))"
