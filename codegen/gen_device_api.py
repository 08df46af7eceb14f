#!/usr/bin/env python3
"""Generates shoal's typed device facade (types x operations x scopes) from the tables below.

Output (checked in; CI regenerates and fails on a diff):
  include/shoal/device/facade.cuh   the public device facade: the shoal_*/shoalx_* device functions
                                    (NVSHMEM names with nvshmem_ -> shoal_, nvshmemx_ -> shoalx_),
                                    included by <shoal/shoal.h> under nvcc

Every function forwards to the explicit-handle API's templates (<shoal/device/*.cuh>, or their
bodies in <shoal/detail/device_*.cuh>, which take the facade name for messages) with the scope
object of its suffix (none: shoal::thread, _warp: shoal::warp, _block: shoal::block) and the
translation unit's __constant__ copy of the default world. A thread-scope function that also exists on the host
(codegen/gen_host_api.py) becomes one __host__ __device__ function that calls the device code on
the device and the host entry point (declared under shoal_detail_host_* by host_api.h) on the host.

The output carries the mark of codegen/generated.py.

Run from anywhere: python3 codegen/gen_device_api.py [--check | --list]
"""
import argparse
import re
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_host_api as host  # noqa: E402  (tables, the host name list and the twin rule)
import generated  # noqa: E402  (the mark of a generated file)

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "include/shoal/device/facade.cuh"
GENERATOR = "codegen/gen_device_api.py"

W = "shoal_detail_world_c"
# The world argument of the RMA calls: the tag whose cold path reads the __constant__ world itself (world_ref).
WT = "shoal::detail::facade_world_tag{}"
SCOPES = [("", "shoal::thread"), ("_warp", "shoal::warp"), ("_block", "shoal::block")]
# Device RMA types: the host's RMA types without long double (double in device code); half and bfloat16 are
# shoal_half_t / shoal_bfloat16_t, CUDA's __half / __nv_bfloat16 under nvcc.
RMA_TYPES = [(tn, ct) for tn, ct in host.RMA_TYPES if tn != "longdouble"]
SIZED = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t",
         128: "shoal::detail::sized_elem<128>::type"}


class Fn:
    def __init__(self, ret, name, params, body, scope):
        self.ret, self.name, self.params, self.body, self.scope = ret, name, params, body, scope


class Gen:
    def __init__(self):
        self.items = []  # Fn or section title (str)

    def section(self, title):
        self.items.append(title)

    def fn(self, ret, name, params, body, scope=""):
        self.items.append(Fn(ret, name, params, body, scope))


def prefix(scope):
    """shoal_ for thread scope, shoalx_ for warp/block (NVSHMEM's nvshmem_/nvshmemx_)."""
    return "shoal_" if scope == "" else "shoalx_"


def nbi_arg(nbi):
    """The template argument of an _nbi name's detail call: kNbi (over the proxy it returns once posted; the
    blocking name waits for completion). Load/store peers: the same code either way."""
    return "<true>" if nbi else ""


def rma(g):
    g.section("RMA: typed put/get/p/g/iput/iget, blocking and _nbi, thread/warp/block")
    for tn, ct in RMA_TYPES:
        sz = f"sizeof({ct})"
        for sfx, sc in SCOPES:
            px = prefix(sfx)
            for nbi in ("", "_nbi"):
                for op, impl in (("put", "putmem"), ("get", "getmem")):
                    n = f"{px}{tn}_{op}{nbi}{sfx}"
                    g.fn("void", n, f"{ct}* dest, const {ct}* source, size_t nelems, int pe",
                         f'shoal::detail::{impl}{nbi_arg(nbi)}({sc}, {WT}, dest, source, nelems * {sz}, pe, "{n}");', sfx)
            if sfx == "":
                g.fn("void", f"shoal_{tn}_p", f"{ct}* dest, {ct} value, int pe",
                     f'shoal::detail::p({W}, dest, value, pe, "shoal_{tn}_p");')
                g.fn(ct, f"shoal_{tn}_g", f"const {ct}* source, int pe",
                     f'return shoal::detail::g({W}, source, pe, "shoal_{tn}_g");')
            for op in ("iput", "iget"):
                n = f"{px}{tn}_{op}{sfx}"
                g.fn("void", n,
                     f"{ct}* dest, const {ct}* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
                     f'shoal::detail::{op}({sc}, {W}, dest, source, dst, sst, nelems, pe, "{n}");', sfx)

    g.section("RMA: sized (putN/getN, N in bits) and untyped (putmem/getmem), thread/warp/block")
    for bits in host.SIZES:
        et = SIZED[bits]
        for sfx, sc in SCOPES:
            px = prefix(sfx)
            for nbi in ("", "_nbi"):
                for op, impl in (("put", "putmem"), ("get", "getmem")):
                    n = f"{px}{op}{bits}{nbi}{sfx}"
                    g.fn("void", n, "void* dest, const void* source, size_t nelems, int pe",
                         f'shoal::detail::{impl}{nbi_arg(nbi)}({sc}, {WT}, dest, source, nelems * {bits // 8}, pe, '
                         f'"{n}");', sfx)
            for op in ("iput", "iget"):
                n = f"{px}{op}{bits}{sfx}"
                g.fn("void", n,
                     "void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
                     f"shoal::detail::{op}({sc}, {W}, static_cast<{et}*>(dest), static_cast<const {et}*>(source), "
                     f'dst, sst, nelems, pe, "{n}");', sfx)
    for sfx, sc in SCOPES:
        px = prefix(sfx)
        for nbi in ("", "_nbi"):
            for op, impl in (("putmem", "putmem"), ("getmem", "getmem")):
                n = f"{px}{op}{nbi}{sfx}"
                g.fn("void", n, "void* dest, const void* source, size_t nbytes, int pe",
                     f'shoal::detail::{impl}{nbi_arg(nbi)}({sc}, {WT}, dest, source, nbytes, pe, "{n}");', sfx)


def signals(g):
    g.section("put-with-signal: typed, sized and untyped, blocking and _nbi, thread/warp/block")
    variants = [(tn, ct, f"sizeof({ct})") for tn, ct in RMA_TYPES]
    variants += [(f"put{b}", "void", str(b // 8)) for b in host.SIZES]
    variants += [("putmem", "void", "")]
    for base, ct, sz in variants:
        src = "const void" if ct == "void" else f"const {ct}"
        stem = base if ct == "void" else f"{base}_put"
        for sfx, sc in SCOPES:
            for nbi in ("", "_nbi"):
                n = f"{prefix(sfx)}{stem}_signal{nbi}{sfx}"
                count, nbytes = ("nbytes", "nbytes") if sz == "" else ("nelems", f"nelems * {sz}")
                g.fn("void", n,
                     f"{ct}* dest, {src}* source, size_t {count}, uint64_t* sig_addr, uint64_t signal, int sig_op, "
                     "int pe",
                     f"shoal::detail::putmem_signal{nbi_arg(nbi)}({sc}, {W}, dest, source, {nbytes}, sig_addr, signal, "
                     f'sig_op, pe, "{n}");', sfx)


def atomics(g):
    g.section("atomics (AMO): standard, extended (float/double/half) and bitwise types; thread scope")
    amo = {}
    for tn, ct in host.AMO_STD:
        amo.setdefault((tn, ct), set()).update(
            ["fetch", "set", "swap", "compare_swap", "fetch_inc", "inc", "fetch_add", "add"])
    for tn, ct in host.AMO_FLOAT + host.AMO_HALF:
        amo.setdefault((tn, ct), set()).update(["fetch", "set", "swap", "fetch_add", "add"])
    for tn, ct in host.AMO_BITWISE:
        amo.setdefault((tn, ct), set()).update(["fetch_and", "and", "fetch_or", "or", "fetch_xor", "xor"])
    order = ["fetch", "set", "swap", "compare_swap", "fetch_inc", "inc", "fetch_add", "add",
             "fetch_and", "and", "fetch_or", "or", "fetch_xor", "xor"]
    for (tn, ct), ops in amo.items():
        for op in order:
            if op not in ops:
                continue
            n = f"shoal_{tn}_atomic_{op}"
            f = f"shoal::device::atomic_{op}"
            if op == "fetch":
                g.fn(ct, n, f"const {ct}* source, int pe", f"return {f}({W}, source, pe);")
            elif op == "set":
                g.fn("void", n, f"{ct}* dest, {ct} value, int pe", f"{f}({W}, dest, value, pe);")
            elif op == "compare_swap":
                g.fn(ct, n, f"{ct}* dest, {ct} cond, {ct} value, int pe", f"return {f}({W}, dest, cond, value, pe);")
            elif op == "fetch_inc":
                g.fn(ct, n, f"{ct}* dest, int pe", f"return {f}({W}, dest, pe);")
            elif op == "inc":
                g.fn("void", n, f"{ct}* dest, int pe", f"{f}({W}, dest, pe);")
            elif op.startswith("fetch_") or op == "swap":
                g.fn(ct, n, f"{ct}* dest, {ct} value, int pe", f"return {f}({W}, dest, value, pe);")
            else:
                g.fn("void", n, f"{ct}* dest, {ct} value, int pe", f"{f}({W}, dest, value, pe);")


def sync(g):
    g.section("point-to-point synchronization: wait_until / test and their _all/_any/_some(_vector) forms")
    mode_of = {"all": "shoal::detail::wait_mode::all", "any": "shoal::detail::wait_mode::any",
               "some": "shoal::detail::wait_mode::some"}
    for tn, ct in host.SYNC_TYPES:
        for verb, is_test in (("wait_until", "false"), ("test", "true")):
            n = f"shoal_{tn}_{verb}"
            if verb == "wait_until":
                g.fn("void", n, f"{ct}* ivar, int cmp, {ct} cmp_value",
                     f'shoal::detail::wait_until({W}, ivar, cmp, cmp_value, "{n}");')
            else:
                g.fn("int", n, f"{ct}* ivar, int cmp, {ct} cmp_value",
                     f'return shoal::detail::test({W}, ivar, cmp, cmp_value, "{n}") ? 1 : 0;')
            for mode in ("all", "any", "some"):
                for vec in (False, True):
                    n = f"shoal_{tn}_{verb}_{mode}" + ("_vector" if vec else "")
                    val = f"{ct}* cmp_values" if vec else f"{ct} cmp_value"
                    valp = "cmp_values" if vec else "&cmp_value"
                    idx = "size_t* indices, " if mode == "some" else ""
                    idxa = "indices" if mode == "some" else "nullptr"
                    params = f"{ct}* ivars, size_t nelems, {idx}const int* status, int cmp, {val}"
                    call = (f"shoal::detail::wait_many<{mode_of[mode]}, {'true' if vec else 'false'}, {is_test}>("
                            f'{W}, ivars, nelems, {idxa}, status, cmp, {valp}, "{n}")')
                    if mode == "all" and verb == "wait_until":
                        g.fn("void", n, params, f"{call};")
                    elif mode == "all":
                        g.fn("int", n, params, f"return static_cast<int>({call});")
                    else:
                        g.fn("size_t", n, params, f"return {call};")


def barriers(g):
    g.section("barrier_all / sync_all at warp and block scope (thread scope: the untyped twins above)")
    for op in ("barrier_all", "sync_all"):
        for sfx, sc in SCOPES[1:]:
            n = f"shoalx_{op}{sfx}"
            g.fn("void", n, "void", f'shoal::detail::barrier({sc}, {W}, "{n}");', sfx)


def collectives(g):
    """The team collectives on the default world: team = shoal::device::team_of(world, handle), the device
    copy of a host team handle. Every one returns 0 (a bad handle traps in checked builds). Thread-scope
    names are the host's (codegen/gen_host_api.py), so they become __host__ __device__ twins; shoal_collect*
    has no device form (it stays host only)."""
    team = f"shoal::device::team_of({W}, team)"

    def fn(name, params, call, sfx):
        g.fn("int", name, params, f"{call}; return 0;", sfx)

    g.section("team collectives: team_sync / barrier, thread/warp/block (the team's handle; returns 0)")
    for verb, impl in (("team_sync", "team_sync"), ("barrier", "team_barrier")):
        for sfx, sc in SCOPES:
            fn(f"{prefix(sfx)}{verb}{sfx}", "shoal_team_t team", f"shoal::device::{impl}({sc}, {W}, {team})", sfx)

    g.section("team collectives: broadcast, fcollect, alltoall (untyped in bytes, then typed), thread/warp/block "
              "(no collect: host only)")
    variants = [("mem", "void", "")] + [(tn, ct, f" * sizeof({ct})") for tn, ct in RMA_TYPES]
    for stem, ct, sz in variants:
        src = "const void" if ct == "void" else f"const {ct}"
        count = "nbytes" if stem == "mem" else "nelems"
        for sfx, sc in SCOPES:
            n = host.movement_name(stem, "broadcast").replace("shoal_", prefix(sfx), 1) + sfx
            fn(n, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {count}, int PE_root",
               f"shoal::device::broadcastmem({sc}, {W}, {team}, dest, source, {count}{sz}, PE_root)", sfx)
            for verb in ("fcollect", "alltoall"):
                n = host.movement_name(stem, verb).replace("shoal_", prefix(sfx), 1) + sfx
                fn(n, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {count}",
                   f"shoal::device::{verb}mem({sc}, {W}, {team}, dest, source, {count}{sz})", sfx)

    for kind in ("reduce", "reducescatter"):
        g.section(f"team collectives: {kind} (types and ops as the host's), thread/warp/block")
        for tn, ct, op in host.reduce_variants():
            for sfx, sc in SCOPES:
                fn(f"{prefix(sfx)}{tn}_{op}_{kind}{sfx}",
                   f"shoal_team_t team, {ct}* dest, const {ct}* source, size_t nreduce",
                   f"shoal::device::{kind}<shoal::device::{op}_op>({sc}, {W}, {team}, dest, source, nreduce)", sfx)

    g.section("team collectives: maxloc reduce on (value, index) double2 pairs (NVSHMEM 3.8), thread/warp/block; "
              "device only")
    for sfx, sc in SCOPES:
        fn(f"{prefix(sfx)}double2_maxloc_reduce{sfx}",
           "shoal_team_t team, double2* dest, const double2* source, size_t nreduce",
           f"shoal::device::maxloc_reduce({sc}, {W}, {team}, dest, source, nreduce)", sfx)


HEADER = "/* clang-format off */\n// " + generated.marker(GENERATOR) + """
// shoal's device facade: NVSHMEM's device API names (nvshmem_ -> shoal_, nvshmemx_ -> shoalx_) on
// the default world, for kernels that take no handle (shoal_int_p, shoalx_putmem_block,
// shoal_barrier_all, ...). Included by <shoal/shoal.h> under nvcc; may also be included alone.
// Header-only, no -rdc: each translation unit keeps its own __constant__ copy of the default world's
// device_world (<shoal/detail/device_facade_world.cuh>), registered with libshoal at static
// initialization and filled when the world is created. Define SHOAL_NO_DEVICE_FACADE to leave it out.
//
// Every function forwards to the explicit API (<shoal/device/*.cuh>) with the scope object of its
// suffix (none: shoal::thread, _warp: shoal::warp, _block: shoal::block) and that world. Contracts:
//   put/get/p/g/iput/iget (RMA contract, rma.cuh): nelems in elements, nbytes for *mem; warp/block: the
//     whole scope calls
//   put_signal (put_signal contract, signal.cuh): data visible before the signal (release)
//   atomics (AMO contract, amo.cuh): relaxed, system scope; thread scope only; half: on the aligned 4-byte
//     word that holds it (fetch/set/swap by compare-and-swap, add natively)
//   wait_until/test (wait contract, sync.cuh): relaxed polls, one acquire; bounded by SHOAL_WAIT_TIMEOUT
//   team collectives (collective contract, coll.cuh) on shoal::device::team_of(world, team): team_sync,
//     barrier, broadcast, fcollect, alltoall (nelems in elements, or nbytes for *mem), reduce, reducescatter
//     (symmetric dest and source), double2 maxloc_reduce (device only); return 0. shoal_collect/shoal_<T>_collect
//     have no device form (host only)
//
// How one name serves host and device without -rdc: a name that is also a host entry point becomes one
// __host__ __device__ inline function. The typed ones call, on the host, the entry point that
// <shoal/detail/host_api.h> declares under shoal_detail_host_* under nvcc. The untyped ones below
// (shoal_my_pe, shoal_fence, ...) keep the host symbol's own name: they are (re)declared __host__
// __device__ (nvcc warning 20040 when <shoal/shoal.h> declared them first, expected and silenced) and
// defined only in the device pass, so host calls bind to libshoal's symbol and device calls inline.
#ifndef SHOAL_DEVICE_FACADE_CUH_
#define SHOAL_DEVICE_FACADE_CUH_

// SHOAL_DETAIL_DEVICE_FACADE, and the host entry points that have a device twin (shoal_detail_host_*).
#include "shoal/detail/host_api.h"
#include "shoal/types.h"

#if defined(SHOAL_DETAIL_LIBSHOAL_BUILD) && defined(__CUDACC__)
#error "libshoal's own sources never include the device facade (<shoal/device/facade.cuh>)"
#endif

#if SHOAL_DETAIL_DEVICE_FACADE

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_facade_world.cuh"
#include "shoal/device/device.cuh"
#include "shoal/device/scope.cuh"

namespace shoal::device {

/// This translation unit's copy of the default world's device handle, the world every facade call
/// uses: pass it to the explicit API to mix both in one kernel. A zero world (n_pes 0) before init.
__device__ __forceinline__ const device_world& facade_world() { return shoal_detail_world_c; }

}  // namespace shoal::device

// Untyped calls whose host entry points <shoal/shoal.h> declares by their own names.
#pragma nv_diag_push
#pragma nv_diag_suppress 20040
SHOAL_EXTERN_C_BEGIN
__host__ __device__ int shoal_my_pe(void);
__host__ __device__ int shoal_n_pes(void);
__host__ __device__ void* shoal_ptr(const void* dest, int pe);
__host__ __device__ void shoal_fence(void);
__host__ __device__ void shoal_quiet(void);
__host__ __device__ void shoal_barrier_all(void);
__host__ __device__ void shoal_sync_all(void);
__host__ __device__ uint64_t shoal_signal_fetch(const uint64_t* sig_addr);
__host__ __device__ uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
__host__ __device__ void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
__host__ __device__ void shoalx_signal_counted_reset(uint64_t* sig_addr);
__host__ __device__ int shoal_team_my_pe(shoal_team_t team);
__host__ __device__ int shoal_team_n_pes(shoal_team_t team);
__host__ __device__ int shoal_team_translate_pe(shoal_team_t src_team, int src_pe, shoal_team_t dest_team);
__host__ __device__ void shoal_info_get_version(int* major, int* minor);
__host__ __device__ void shoal_info_get_name(char* name);
__host__ __device__ void shoal_global_exit(int status);
SHOAL_EXTERN_C_END
#pragma nv_diag_pop

#if defined(__CUDA_ARCH__)
SHOAL_EXTERN_C_BEGIN
/// This PE's number in the default world.
__host__ __device__ inline int shoal_my_pe(void) { return shoal_detail_world_c.my_pe; }
/// The number of PEs in the default world.
__host__ __device__ inline int shoal_n_pes(void) { return shoal_detail_world_c.n_pes; }
/// dest's copy on pe that this thread may load/store, or NULL (shoal::device::ptr).
__host__ __device__ inline void* shoal_ptr(const void* dest, int pe) {
  return const_cast<void*>(shoal::device::ptr(shoal_detail_world_c, dest, pe));
}
/// fence.acq_rel.sys: orders this thread's earlier puts/AMOs/signals before its later ones.
__host__ __device__ inline void shoal_fence(void) { shoal::device::fence(shoal_detail_world_c); }
/// fence.sc.sys: completes this thread's earlier puts/AMOs/signals.
__host__ __device__ inline void shoal_quiet(void) { shoal::device::quiet(shoal_detail_world_c); }
/// Device barrier over all PEs, ONE thread per PE (shoalx_barrier_all_warp/_block for groups).
__host__ __device__ inline void shoal_barrier_all(void) {
  shoal::detail::barrier(shoal::thread, shoal_detail_world_c, "shoal_barrier_all");
}
/// As shoal_barrier_all (same release/acquire chain), one thread per PE.
__host__ __device__ inline void shoal_sync_all(void) {
  shoal::detail::barrier(shoal::thread, shoal_detail_world_c, "shoal_sync_all");
}
/// ld.acquire.sys of the local signal word.
__host__ __device__ inline uint64_t shoal_signal_fetch(const uint64_t* sig_addr) {
  return shoal::device::signal_fetch(shoal_detail_world_c, sig_addr);
}
/// Relaxed polls, one acquire; bounded by the world's wait timeout.
__host__ __device__ inline uint64_t shoal_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return shoal::detail::wait_until(shoal_detail_world_c, sig_addr, cmp, cmp_value, "shoal_signal_wait_until");
}
/// SET: st.relaxed.sys; ADD: red.relaxed.sys.add on the peer's signal (no ordering; fence first).
__host__ __device__ inline void shoalx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  shoal::detail::signal_op(shoal_detail_world_c, sig_addr, signal, sig_op, pe, "shoalx_signal_op");
}
/// st.relaxed.sys of 0 on the local signal word (shoal::device::signal_counted_reset).
__host__ __device__ inline void shoalx_signal_counted_reset(uint64_t* sig_addr) {
  shoal::device::signal_counted_reset(shoal_detail_world_c, sig_addr);
}
/// This PE's number in `team` (a host team handle); -1 for SHOAL_TEAM_INVALID. Checked builds trap on a bad handle.
__host__ __device__ inline int shoal_team_my_pe(shoal_team_t team) {
  if (team == SHOAL_TEAM_INVALID) return -1;
  return shoal::detail::team_of(shoal_detail_world_c, team, "shoal_team_my_pe").my_pe_in_team;
}
/// The number of PEs in `team`; -1 for SHOAL_TEAM_INVALID.
__host__ __device__ inline int shoal_team_n_pes(shoal_team_t team) {
  if (team == SHOAL_TEAM_INVALID) return -1;
  return shoal::detail::team_of(shoal_detail_world_c, team, "shoal_team_n_pes").n_pes;
}
/// src_pe of src_team as a PE of dest_team; -1 when it is not in dest_team, out of range, or a handle is invalid.
__host__ __device__ inline int shoal_team_translate_pe(shoal_team_t src_team, int src_pe, shoal_team_t dest_team) {
  if (src_team == SHOAL_TEAM_INVALID || dest_team == SHOAL_TEAM_INVALID) return -1;
  const int pe = shoal::detail::team_of(shoal_detail_world_c, src_team, "shoal_team_translate_pe").world_pe(src_pe);
  return pe < 0 ? -1 : shoal::detail::team_of(shoal_detail_world_c, dest_team, "shoal_team_translate_pe").team_pe_of(pe);
}
/// The OpenSHMEM version shoal follows (SHOAL_MAJOR_VERSION.SHOAL_MINOR_VERSION).
__host__ __device__ inline void shoal_info_get_version(int* major, int* minor) {
  *major = SHOAL_MAJOR_VERSION;
  *minor = SHOAL_MINOR_VERSION;
}
/// SHOAL_VENDOR_STRING, terminated.
__host__ __device__ inline void shoal_info_get_name(char* name) {
  const char vendor[] = SHOAL_VENDOR_STRING;
  for (unsigned i = 0; i < sizeof(vendor); ++i) name[i] = vendor[i];
}
/// Reports the status (the world's report box, printed by the host) and traps: this PE's kernel fails, its host sees
/// the error, and the job stops as on any PE failure (the other PEs name this PE as dead).
__host__ __device__ inline void shoal_global_exit(int status) {
#if SHOAL_DEVICE_PRINTF
  printf("shoal_global_exit(%d) called in a kernel on PE %d\\n", status, shoal_detail_world_c.my_pe);
#endif
  shoal::detail::report_and_trap(shoal_detail_world_c.report_box, shoal::detail::device_report_kind::global_exit,
                                 "shoal_global_exit", shoal_detail_world_c.my_pe, -1, status, nullptr);
}
SHOAL_EXTERN_C_END
#endif  // __CUDA_ARCH__
"""

FOOTER = """
#endif  // SHOAL_DETAIL_DEVICE_FACADE
#endif  // SHOAL_DEVICE_FACADE_CUH_
"""


def render(g, host_fns, host_only):
    out = [HEADER]
    seen = set()
    twins = 0
    for item in g.items:
        if isinstance(item, str):
            out.append(f"\n// {item}")
            continue
        f = item
        assert f.name not in seen, f"duplicate {f.name}"
        seen.add(f.name)
        h = host_fns.get(f.name)
        assert f.name not in host_only, f"{f.name}: the host API declares it host only (no device twin)"
        if h is not None and host.has_device_twin(f.name):
            hret, hparams = h
            assert (hret, hparams) == (f.ret, f.params), f"{f.name}: host {h} != device {(f.ret, f.params)}"
            alias = host.host_alias(f.name)
            args = ", ".join(p.split()[-1].lstrip("*") for p in f.params.split(", "))
            ret = "return " if f.ret != "void" else ""
            out.append(f"__host__ __device__ inline {f.ret} {f.name}({f.params}) {{\n"
                       f"#ifdef __CUDA_ARCH__\n  {f.body}\n#else\n  {ret}{alias}({args});\n#endif\n}}")
            twins += 1
        else:
            out.append(f"__device__ __forceinline__ {f.ret} {f.name}({f.params}) {{ {f.body} }}")
    missing = [n for n in host_fns if host.has_device_twin(n) and n not in host_only and n not in seen]
    assert not missing, f"host entry points declared with a device twin but not generated: {missing[:5]}"
    out.append(FOOTER)
    return "\n".join(out), len(seen), twins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail if the checked-in output differs")
    ap.add_argument("--list", action="store_true", help="print the output (repository path)")
    args = ap.parse_args()
    if args.list:
        print(OUT.relative_to(ROOT).as_posix())
        return 0
    he = host.Emitter()
    host.rma(he)
    host.signals(he)
    host.atomics(he)
    host.sync(he)
    host.stream_rma(he)
    host.collectives(he)
    host.collectives_on_stream(he)
    host_fns = {name: (ret, params) for ret, name, params in he.fns}
    g = Gen()
    rma(g)
    signals(g)
    atomics(g)
    sync(g)
    barriers(g)
    collectives(g)
    text, count, twins = render(g, host_fns, he.host_only)
    # Every _nbi RMA and put-with-signal name must reach its detail call's non-blocking form (over the proxy a
    # blocking one waits for each operation's completion, so a kernel's nbi gets would not overlap).
    for m in re.finditer(r'detail::(?:putmem_signal|putmem|getmem)(<true>)?\(.*"(\w+)"\);', text):
        if ("_nbi" in m.group(2)) != (m.group(1) is not None):
            print(f"gen_device_api.py: {m.group(2)} calls the wrong (blocking or _nbi) form of its detail call")
            return 1
    if generated.unmarked(GENERATOR, {OUT: text}, ROOT):
        print(f"gen_device_api.py: the output lacks the mark of codegen/generated.py ({generated.marker(GENERATOR)})")
        return 1
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print("generated file is stale; run python3 codegen/gen_device_api.py:",
                  OUT.relative_to(ROOT), sep="\n  ")
            return 1
    else:
        OUT.write_text(text)
    print(f"{'checked' if args.check else 'wrote'} {count} device facade functions ({twins} __host__ __device__)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
