#!/usr/bin/env bash
# codegen test (no GPU needed): pins the PTX each ordering primitive and fast path of the device API
# emits, and checks that every public device header compiles alone and <shoal/shoal.h> compiles under
# nvcc (with and without the facade) and as C11/C++ (unchanged host API).
# Usage: check_ptx.sh <nvcc> <source root> <work dir> [host C compiler] [host C++ compiler]
set -euo pipefail
nvcc=$1
root=$2
work=$3
cc=${4:-cc}
cxx=${5:-c++}
mkdir -p "$work"
flags=(-std=c++20 -arch=sm_90 -Werror all-warnings -I"$root/include")
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

# --- 1. PTX of each probe kernel ------------------------------------------------------------------
"$nvcc" "${flags[@]}" -ptx "$root/tests/codegen/ptx_probe.cu" -o "$work/ptx_probe.ptx"
"$nvcc" "${flags[@]}" -ptx "$root/tests/codegen/facade_probe.cu" -o "$work/facade_probe.ptx"
cat "$work/ptx_probe.ptx" "$work/facade_probe.ptx" >"$work/all.ptx"

body() {  # the PTX of one entry
  awk -v k="$1" '$0 ~ "^\\.visible \\.entry " k "\\(" {on=1} on {print} on && /^}/ {exit}' "$work/all.ptx"
}
# expect <kernel> <fixed string that must appear> ...
expect() {
  local k=$1
  shift
  local b
  b=$(body "$k")
  [[ -n "$b" ]] || { bad "$k: no such kernel in the PTX"; return; }
  for s in "$@"; do
    grep -qF -- "$s" <<<"$b" || bad "$k: expected '$s'"
  done
}
# forbid <kernel> <fixed string that must NOT appear> ...
forbid() {
  local k=$1
  shift
  local b
  b=$(body "$k")
  for s in "$@"; do
    if grep -qF -- "$s" <<<"$b"; then bad "$k: must not contain '$s'"; fi
  done
}
# at_least <kernel> <count> <fixed string>
at_least() {
  local n
  n=$(body "$1" | grep -cF -- "$3" || true)
  ((n >= $2)) || bad "$1: expected >= $2 x '$3', found $n"
}

# raw wrappers (ptx.cuh)
expect probe_ld_relaxed_sys "ld.relaxed.sys.global.u64"
expect probe_ld_acquire_sys "ld.acquire.sys.global.u64"
expect probe_st_relaxed_sys "st.relaxed.sys.global.u64"
expect probe_st_release_sys "st.release.sys.global.u64"
expect probe_red_add_release_sys "red.release.sys.global.add.u64"
expect probe_red_add_relaxed_sys "red.relaxed.sys.global.add.u64"
expect probe_fence_acq_rel_sys "fence.acq_rel.sys"
expect probe_ld_acquire_gpu "ld.acquire.gpu.global.u64"
expect probe_atom_add_relaxed_gpu "atom.relaxed.gpu.global.add.u64"
expect probe_red_max_release_gpu "red.release.gpu.global.max.u64"
expect probe_red_add_relaxed_gpu "red.relaxed.gpu.global.add.u64"
expect probe_ld_acquire_sys_v2 "ld.acquire.sys.global.v2.u64"
expect probe_st_relaxed_sys_v2 "st.relaxed.sys.global.v2.u64"
expect probe_fence_sc_sys "fence.sc.sys"
expect probe_globaltimer "%globaltimer"
# ordering of the API calls
expect probe_fence "fence.acq_rel.sys"
forbid probe_fence "fence.sc"
expect probe_quiet "fence.sc.sys"
expect probe_p "st.relaxed.sys.global.u32"
forbid probe_p "fence." "membar"
expect probe_g "ld.relaxed.sys.global.u64"
expect probe_put_signal_set "st.global.v4.u32" "st.release.sys.global.u64"
forbid probe_put_signal_set "fence.sc" "membar"
expect probe_put_signal_add_block "bar.sync" "red.release.sys.global.add.u64"
expect probe_signal_wait_until "ld.acquire.sys.global.u64" "%globaltimer"
forbid probe_signal_wait_until "fence."
expect probe_wait_until_all "ld.relaxed.sys.global.u32" "fence.acq_rel.sys"
forbid probe_wait_until_all "ld.acquire"
expect probe_test_some_vector "ld.relaxed.sys.global.u64" "fence.acq_rel.sys"
expect probe_atomic_fetch_add "atom.relaxed.sys.global.add.u64"
expect probe_atomic_add "red.relaxed.sys.global.add.u64"
forbid probe_atomic_add "atom."
expect probe_atomic_float_add "red.relaxed.sys.global.add.f32"
expect probe_atomic_compare_swap "atom.relaxed.sys.global.cas.b32"
# half: add natively (2-byte f16 atomics), swap by compare-and-swap on the containing 4-byte word
expect probe_atomic_half_add "red.relaxed.sys.global.add.noftz.f16"
forbid probe_atomic_half_add "atom."
expect probe_atomic_half_fetch_add "atom.relaxed.sys.global.add.noftz.f16"
expect probe_atomic_half_swap "ld.relaxed.sys.global.u32" "atom.relaxed.sys.global.cas.b32"
expect probe_barrier_all_block "bar.sync" "fence.acq_rel.sys" "st.relaxed.sys.global.u64" "st.release.sys.global.u64" "ld.acquire.sys.global.u64"
forbid probe_barrier_all_block "fence.sc"
# fast paths (detail/device_copy.cuh): 16-byte vector accesses, several loads in flight; TMA ring
# team collectives: LL lines are whole 8-byte halves, with no fence on the path; the channel
# barrier is barrier_all's ordering; the two-shot reduce keeps 2 vector loads per member in flight
expect probe_reduce_ll_block "st.volatile.global.v2.u64" "ld.volatile.global.v2.u64"
forbid probe_reduce_ll_block "fence." "membar" "ld.acquire" "st.release"
expect probe_team_barrier_channel "fence.acq_rel.sys" "st.relaxed.sys.global.u64" "st.release.sys.global.u64" "ld.acquire.sys.global.u64"
forbid probe_team_barrier_channel "fence.sc"
expect probe_reduce_direct_block "ld.global.v4.u32" "st.global.v4.u32"
at_least probe_reduce_direct_block 2 "ld.global.v4.u32"
forbid probe_reduce_direct_block "fence." "membar"
# the proxy paths of the team collectives are calls, not inlined into the load/store paths
expect probe_reduce_sym_block "reduce_sym_proxy" "reduce_sym_direct"
expect probe_broadcast_block "move_proxy" "ld.global.v4.u32" "st.global.v4.u32"
# ... and SHOAL_DEVICE_COLL_PROXY=0 leaves them out
"$nvcc" "${flags[@]}" -DSHOAL_DEVICE_COLL_PROXY=0 -ptx "$root/tests/codegen/ptx_probe.cu" -o "$work/no_proxy.ptx"
grep -qF "move_proxy" "$work/no_proxy.ptx" && bad "SHOAL_DEVICE_COLL_PROXY=0: move_proxy is still in the PTX"
grep -qF "reduce_sym_proxy" "$work/no_proxy.ptx" && bad "SHOAL_DEVICE_COLL_PROXY=0: reduce_sym_proxy is still in the PTX"
expect probe_put_block_vec "ld.global.v4.u32" "st.global.v4.u32"
at_least probe_put_block_vec 4 "ld.global.v4.u32"
forbid probe_put_block_vec "fence." "membar"
expect probe_put_warp "ld.global.v4.u32" "st.global.v4.u32"
# shoal::warps<4>: the group's named barrier (bar.sync id, 128), ids 1..15
expect probe_put_warps4 "ld.global.v4.u32" "st.global.v4.u32" "bar.sync"
at_least probe_put_warp 8 "ld.global.v4.u32"
expect probe_get_block "ld.global.v4.u32"
expect probe_put_block_tma \
  "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" \
  "cp.async.bulk.global.shared::cta.bulk_group" "cp.async.bulk.commit_group" \
  "cp.async.bulk.wait_group.read 1" "cp.async.bulk.wait_group 0" \
  "mbarrier.try_wait.parity.shared::cta.b64" "mbarrier.arrive.expect_tx.shared::cta.b64" \
  "fence.proxy.async.global" "st.global.v4.u32"
# the facade: world from the __constant__ copy, same instructions
expect probe_facade_int_p "ld.const" "st.relaxed.sys.global.u32"
expect probe_facade_putmem_signal_block "bar.sync" "red.release.sys.global.add.u64"
expect probe_facade_signal_wait_until "ld.acquire.sys.global.u64"
expect probe_facade_quiet "fence.sc.sys"
expect probe_facade_barrier_all "st.relaxed.sys.global.u64" "fence.acq_rel.sys"
expect probe_facade_fetch_add "atom.relaxed.sys.global.add.u64"
# the facade's team collectives read the team table through the __constant__ world (team_of)
for k in probe_facade_team_barrier_block probe_facade_int_sum_reduce probe_facade_half_max_reducescatter_warp \
  probe_facade_bfloat16_sum_reduce_block probe_facade_float_fcollect; do
  expect "$k" "ld.const"
done
expect probe_facade_team_barrier_block "bar.sync"

# --- 1b. no printf in device code (session 22) ---------------------------------------------------
# Code that may call an external function (vprintf) gets a shared-memory drain (MEMBAR.ALL.CTA) before each of its
# system fences, 0.075 us each on the H200; failing calls report through the world's report box instead
# (device_common.cuh, report_and_trap). SHOAL_DEVICE_PRINTF=1 brings printf back: the proof that both checks can fail.
if grep -q "vprintf" "$work/all.ptx"; then bad "the device API's PTX calls vprintf (a failure path that prints?)"; fi
"$nvcc" "${flags[@]}" -DSHOAL_DEVICE_PRINTF=1 -ptx "$root/tests/codegen/ptx_probe.cu" -o "$work/ptx_probe_printf.ptx"
grep -q "vprintf" "$work/ptx_probe_printf.ptx" || bad "SHOAL_DEVICE_PRINTF=1 emits no vprintf: the check above cannot fail"
cuobjdump=$(dirname "$nvcc")/cuobjdump
[[ -x $cuobjdump ]] || cuobjdump=$(command -v cuobjdump || true)
if [[ -n $cuobjdump && -x $cuobjdump ]]; then
  drains() {  # drains <cubin> <kernel>: its MEMBAR.ALL.CTA count
    "$cuobjdump" -sass -fun "$2" "$1" | grep -c "MEMBAR.ALL.CTA" || true
  }
  "$nvcc" "${flags[@]}" -cubin "$root/tests/codegen/ptx_probe.cu" -o "$work/ptx_probe.cubin"
  "$nvcc" "${flags[@]}" -DSHOAL_DEVICE_PRINTF=1 -cubin "$root/tests/codegen/ptx_probe.cu" -o "$work/ptx_probe_printf.cubin"
  for k in probe_barrier_all_block probe_put_signal_set probe_quiet probe_signal_wait_until; do
    n=$(drains "$work/ptx_probe.cubin" "$k")
    ((n == 0)) || bad "$k: $n shared-memory drain(s) (MEMBAR.ALL.CTA) before its system fences"
  done
  n=$(drains "$work/ptx_probe_printf.cubin" probe_barrier_all_block)
  ((n > 0)) || bad "probe_barrier_all_block with SHOAL_DEVICE_PRINTF=1 has no drain: the check above cannot fail"
else
  echo "note: no cuobjdump beside $nvcc or on PATH; the SASS half of the printf check is skipped"
fi

# --- 2. headers compile alone ------------------------------------------------------------------
# every installed device header, public and detail (a detail body must include what it uses too)
headers=(shoal/shoal.h)
for f in "$root"/include/shoal/device/*.cuh "$root"/include/shoal/detail/*.cuh; do
  headers+=("${f#"$root"/include/}")
done
for h in "${headers[@]}"; do
  echo "#include <$h>" >"$work/alone.cu"
  "$nvcc" "${flags[@]}" -c "$work/alone.cu" -o "$work/alone.o" || bad "$h does not compile alone under nvcc"
done
# either include order of the facade and shoal.h: one name on both sides (host call, device call)
printf '%s\n' '#include <shoal/device/facade.cuh>' '#include <shoal/shoal.h>' \
  '__global__ void k(int* o) { *o = shoal_my_pe(); shoal_fence(); }' 'int host() { return shoal_my_pe(); }' \
  >"$work/order.cu"
"$nvcc" "${flags[@]}" -c "$work/order.cu" -o "$work/order.o" || bad "facade.cuh before shoal.h does not compile"
# libshoal's own sources (SHOAL_DETAIL_LIBSHOAL_BUILD) never get the facade from shoal.h: no registration
echo "#include <shoal/shoal.h>" >"$work/alone.cu"
"$nvcc" "${flags[@]}" -DSHOAL_DETAIL_LIBSHOAL_BUILD -c "$work/alone.cu" -o "$work/alone.o" ||
  bad "shoal/shoal.h with SHOAL_DETAIL_LIBSHOAL_BUILD does not compile under nvcc"
if nm "$work/alone.o" | grep -c shoal_detail_register_device_facade >/dev/null; then
  bad "shoal/shoal.h brings the device facade into a libshoal source (SHOAL_DETAIL_LIBSHOAL_BUILD)"
fi
echo "#include <shoal/shoal.h>" >"$work/alone.cu"
"$nvcc" "${flags[@]}" -DSHOAL_NO_DEVICE_FACADE -c "$work/alone.cu" -o "$work/alone.o" ||
  bad "shoal/shoal.h with SHOAL_NO_DEVICE_FACADE does not compile under nvcc"
# the plain C/C++ host API and the registry header are untouched by the CUDA branch
printf '#include <shoal/shoal.h>\n#include <shoal/detail/device_registry.h>\nint main(void) { return shoal_n_pes(); }\n' \
  >"$work/alone.c"
"$cc" -std=c11 -Wall -Wextra -Werror -I"$root/include" -c "$work/alone.c" -o "$work/alone_c.o" ||
  bad "shoal.h + device_registry.h as C11"
cp "$work/alone.c" "$work/alone.cc"
"$cxx" -std=c++20 -Wall -Wextra -Werror -I"$root/include" -c "$work/alone.cc" -o "$work/alone_cc.o" ||
  bad "shoal.h + device_registry.h as C++"

# --- 3. the single-GPU smoke test builds (run it on a GPU: see its header) ---------------------
"$nvcc" "${flags[@]}" -O2 "$root/tests/codegen/device_smoke.cu" -o "$work/device_smoke" ||
  bad "tests/codegen/device_smoke.cu does not build"

if ((fail)); then
  echo "codegen: FAILED (PTX in $work)"
  exit 1
fi
echo "codegen: all PTX checks and header builds passed"
