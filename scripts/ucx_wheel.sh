#!/usr/bin/env bash
# Unpacks the PyPI wheel libucx-cu13 (UCX with CUDA support) into a directory and prints what a
# shoal build and run need to use it, for machines without UCX packages (the GPU machine).
#
#   get the wheel where a registry is reachable (do not commit it; ~43 MB):
#     pip download --no-deps libucx-cu13 -d wheels/
#   then, on the build machine:
#     eval "$(scripts/ucx_wheel.sh wheels/libucx_cu13-*.whl /tmp/ucx)"
#     cmake --preset gpu-proxy "$WHEEL_UCX_CMAKE_ARGS"      (scripts/gpu.sh --ucx-bundle does both)
#   (carry the .whl, 43 MB, not the unpacked tree: ~93 MB even without the static archives)
#   prints `export` lines: WHEEL_UCX_CMAKE_ARGS (-Ducx_DIR=...), PKG_CONFIG_PATH, LD_LIBRARY_PATH,
#   UCX_MODULE_DIR, PATH (ucx_info, ucx_perftest). Check CUDA support with `ucx_info -d | grep cuda`.
#
# The wheel's layout (libucx-cu13 1.22.0), everything under libucx/:
#   include/{ucp,ucs,uct,ucm}/         headers (ucp/api/ucp.h)
#   lib/lib{ucp,uct,ucs,ucm,ucs_signal}.so*  the libraries (plus .a/.la, unused here)
#   lib/ucx/libuct_cuda.so, libucm_cuda.so, libuct_cma.so   transport modules (uct_cuda needs
#                                      libcuda.so.1 and libnvidia-ml.so.1 at run time)
#   lib/cmake/ucx/ucx-config.cmake     relocatable (prefix from its own path): targets ucx::ucp,
#                                      ucx::ucs, ucx::uct; ucx-config-version.cmake gives ucx_VERSION
#   lib/pkgconfig/ucx*.pc              prefix= the wheel's build directory: rewritten here
#   bin/ucx_info, ucx_perftest         tools
#   etc/ucx/ucx.conf
# The libraries' RPATH points at the wheel's build directory plus $ORIGIN, so libucp finds its
# siblings; modules are found in <libdir>/ucx (UCX_MODULE_DIR set anyway). The static archives
# (~54 MB) are deleted to keep the tree small (--keep-static keeps them).
set -euo pipefail

usage() { echo "usage: $0 [--keep-static] <libucx_cu13-*.whl | ucx-*.tar.xz> <destination dir>" >&2; exit 2; }
keep_static=0
if [[ "${1:-}" == "--keep-static" ]]; then keep_static=1; shift; fi
[[ $# -eq 2 ]] || usage
wheel=$1
dest=$2
[[ -f "$wheel" ]] || { echo "$0: no wheel at $wheel (pip download --no-deps libucx-cu13 -d DIR)" >&2; exit 1; }

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
# A wheel is a zip file; Python's zipfile needs no unzip binary. A .tar.xz is the slim bundle that
# scripts/carry_bundle.sh makes from the wheel (same layout, no static archives, duplicates as links).
case $wheel in
  *.tar.xz) tar -xJf "$wheel" -C "$dest" ;;
  *) python3 -m zipfile -e "$wheel" "$dest" >&2 ;;
esac
root="$dest/libucx"
[[ -f "$root/include/ucp/api/ucp.h" && -f "$root/lib/cmake/ucx/ucx-config.cmake" ]] ||
  { echo "$0: $wheel does not have the expected layout (libucx/include, libucx/lib/cmake/ucx)" >&2; exit 1; }
if [[ $keep_static -eq 0 ]]; then
  find "$root/lib" \( -name '*.a' -o -name '*.la' \) -delete
fi
chmod +x "$root"/bin/* 2>/dev/null || true

# pkg-config files carry the build machine's prefix: point them here.
for pc in "$root"/lib/pkgconfig/*.pc; do
  sed -i "s|^prefix *=.*|prefix = $root|" "$pc"
done

version=$(cat "$root/UCX_WHEEL_VERSION.txt" 2>/dev/null || echo unknown)
echo "# UCX $version from $(basename "$wheel") in $root" >&2
cat <<EOF
export WHEEL_UCX_CMAKE_ARGS="-Ducx_DIR=$root/lib/cmake/ucx"
export PKG_CONFIG_PATH="$root/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$root/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$root/lib/ucx"
export PATH="$root/bin:\$PATH"
EOF
