// Every inline PTX instruction of shoal's device API, one wrapper each, named by operation, memory
// order and scope (ld_acquire_sys = ld.acquire.sys). Symmetric addresses are global memory, so the
// ordering wrappers take generic pointers to global memory and emit .global forms. sm_70+; the TMA,
// mbarrier and proxy-fence wrappers need sm_90 (they trap on older targets of a fat binary).
// tests/codegen pins the instruction each wrapper emits.
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define SHOAL_PTX_SM90 1
#else
#define SHOAL_PTX_SM90 0
#endif

namespace shoal::ptx {

// Every wrapper is `asm volatile` with a "memory" clobber: the compiler keeps them in program order
// relative to each other and to surrounding C++ memory accesses (a user's store to a put's source
// must not sink below the put's load of it). The hardware still overlaps them.

// --- strong loads: relaxed (polls) and acquire ------------------------------------------------

/// ld.relaxed.sys: morally strong, not served from a stale L1 line; no ordering of later accesses.
__device__ __forceinline__ uint8_t ld_relaxed_sys(const uint8_t* addr) {
  uint16_t v;
  asm volatile("ld.relaxed.sys.global.u8 %0, [%1];" : "=h"(v) : "l"(addr) : "memory");
  return static_cast<uint8_t>(v);
}
__device__ __forceinline__ uint16_t ld_relaxed_sys(const uint16_t* addr) {
  uint16_t v;
  asm volatile("ld.relaxed.sys.global.u16 %0, [%1];" : "=h"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t* addr) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* addr) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
  return v;
}

/// ld.acquire.sys: later accesses of this thread are ordered after it (pairs with a release).
__device__ __forceinline__ uint16_t ld_acquire_sys(const uint16_t* addr) {
  uint16_t v;
  asm volatile("ld.acquire.sys.global.u16 %0, [%1];" : "=h"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* addr) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* addr) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
  return v;
}

// --- strong stores: relaxed and release -------------------------------------------------------

/// st.relaxed.sys: morally strong store (visible to strong readers on any GPU/CPU; not merged).
__device__ __forceinline__ void st_relaxed_sys(uint8_t* addr, uint8_t value) {
  asm volatile("st.relaxed.sys.global.u8 [%0], %1;" ::"l"(addr), "h"(static_cast<uint16_t>(value)) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint16_t* addr, uint16_t value) {
  asm volatile("st.relaxed.sys.global.u16 [%0], %1;" ::"l"(addr), "h"(value) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint32_t* addr, uint32_t value) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint64_t* addr, uint64_t value) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

/// st.release.sys: this thread's earlier accesses (and those ordered before them) are visible to
/// whoever acquires this value.
__device__ __forceinline__ void st_release_sys(uint32_t* addr, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void st_release_sys(uint64_t* addr, uint64_t value) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

// --- reductions (no return value): relaxed and release ---------------------------------------

/// red.release.sys.add: release, then atomically add (the put-with-signal ADD path).
__device__ __forceinline__ void red_add_release_sys(uint64_t* addr, uint64_t value) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}
__device__ __forceinline__ void red_add_relaxed_sys(uint64_t* addr, uint64_t value) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}
__device__ __forceinline__ void red_add_relaxed_sys(uint32_t* addr, uint32_t value) {
  asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void red_add_relaxed_sys(float* addr, float value) {
  asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(addr), "f"(value) : "memory");
}
__device__ __forceinline__ void red_add_relaxed_sys(double* addr, double value) {
  asm volatile("red.relaxed.sys.global.add.f64 [%0], %1;" ::"l"(addr), "d"(value) : "memory");
}
/// red.relaxed.sys.add.noftz.f16: IEEE half add (round to nearest even, subnormals kept), on the half's bits.
__device__ __forceinline__ void red_add_f16_relaxed_sys(uint16_t* addr, uint16_t value_bits) {
  asm volatile("red.relaxed.sys.global.add.noftz.f16 [%0], %1;" ::"l"(addr), "h"(value_bits) : "memory");
}
__device__ __forceinline__ void red_and_relaxed_sys(uint32_t* addr, uint32_t value) {
  asm volatile("red.relaxed.sys.global.and.b32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void red_and_relaxed_sys(uint64_t* addr, uint64_t value) {
  asm volatile("red.relaxed.sys.global.and.b64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}
__device__ __forceinline__ void red_or_relaxed_sys(uint32_t* addr, uint32_t value) {
  asm volatile("red.relaxed.sys.global.or.b32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void red_or_relaxed_sys(uint64_t* addr, uint64_t value) {
  asm volatile("red.relaxed.sys.global.or.b64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}
__device__ __forceinline__ void red_xor_relaxed_sys(uint32_t* addr, uint32_t value) {
  asm volatile("red.relaxed.sys.global.xor.b32 [%0], %1;" ::"l"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ void red_xor_relaxed_sys(uint64_t* addr, uint64_t value) {
  asm volatile("red.relaxed.sys.global.xor.b64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

// --- atomics with a result: relaxed, system scope, .global state space ----------------------
// Peer heap words are always global memory. Naming the state space matters: a generic atom (what
// cuda::atomic_ref emits) compiles to ATOM.E plus a branch for the shared-memory window, a .global
// one to a single ATOMG, the instruction NVSHMEM's atomicAdd_system compiles to (cuobjdump -sass).

#define SHOAL_PTX_ATOM_FETCH(name, op, ty, ctype, c)                                                                   \
  __device__ __forceinline__ ctype name(ctype* addr, ctype value) {                                                    \
    ctype old;                                                                                                         \
    asm volatile("atom.relaxed.sys.global." op "." ty " %0, [%1], %2;" : "=" c(old) : "l"(addr), c(value) : "memory"); \
    return old;                                                                                                        \
  }
SHOAL_PTX_ATOM_FETCH(atom_add_relaxed_sys, "add", "u32", uint32_t, "r")
SHOAL_PTX_ATOM_FETCH(atom_add_relaxed_sys, "add", "u64", uint64_t, "l")
SHOAL_PTX_ATOM_FETCH(atom_add_relaxed_sys, "add", "f32", float, "f")
SHOAL_PTX_ATOM_FETCH(atom_add_relaxed_sys, "add", "f64", double, "d")
SHOAL_PTX_ATOM_FETCH(atom_and_relaxed_sys, "and", "b32", uint32_t, "r")
SHOAL_PTX_ATOM_FETCH(atom_and_relaxed_sys, "and", "b64", uint64_t, "l")
SHOAL_PTX_ATOM_FETCH(atom_or_relaxed_sys, "or", "b32", uint32_t, "r")
SHOAL_PTX_ATOM_FETCH(atom_or_relaxed_sys, "or", "b64", uint64_t, "l")
SHOAL_PTX_ATOM_FETCH(atom_xor_relaxed_sys, "xor", "b32", uint32_t, "r")
SHOAL_PTX_ATOM_FETCH(atom_xor_relaxed_sys, "xor", "b64", uint64_t, "l")
SHOAL_PTX_ATOM_FETCH(atom_exch_relaxed_sys, "exch", "b32", uint32_t, "r")
SHOAL_PTX_ATOM_FETCH(atom_exch_relaxed_sys, "exch", "b64", uint64_t, "l")
#undef SHOAL_PTX_ATOM_FETCH

/// atom.relaxed.sys.add.noftz.f16: IEEE half add returning the old value, on the half's bits.
__device__ __forceinline__ uint16_t atom_add_f16_relaxed_sys(uint16_t* addr, uint16_t value_bits) {
  uint16_t old;
  asm volatile("atom.relaxed.sys.global.add.noftz.f16 %0, [%1], %2;"
               : "=h"(old)
               : "l"(addr), "h"(value_bits)
               : "memory");
  return old;
}

__device__ __forceinline__ uint32_t atom_cas_relaxed_sys(uint32_t* addr, uint32_t expected, uint32_t desired) {
  uint32_t old;
  asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(addr), "r"(expected), "r"(desired)
               : "memory");
  return old;
}
__device__ __forceinline__ uint64_t atom_cas_relaxed_sys(uint64_t* addr, uint64_t expected, uint64_t desired) {
  uint64_t old;
  asm volatile("atom.relaxed.sys.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old)
               : "l"(addr), "l"(expected), "l"(desired)
               : "memory");
  return old;
}

// --- GPU-scope words (device memory that only this GPU's threads touch) ---------------------------

/// ld.acquire.gpu: an acquire load at GPU scope (the proxy ring's gate, shoal/detail/proxy_ring.hpp).
__device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t* addr) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
  return v;
}
/// atom.relaxed.gpu.add.u64: returns the old value.
__device__ __forceinline__ uint64_t atom_add_relaxed_gpu(uint64_t* addr, uint64_t value) {
  uint64_t old;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(addr), "l"(value) : "memory");
  return old;
}
/// red.relaxed.gpu.add.u64: adds without waiting for the old value (a counter nobody reads back here).
__device__ __forceinline__ void red_add_relaxed_gpu(uint64_t* addr, uint64_t value) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}
/// red.release.gpu.max.u64: raises the word to `value` (no lower), releasing this thread's earlier accesses.
__device__ __forceinline__ void red_max_release_gpu(uint64_t* addr, uint64_t value) {
  asm volatile("red.release.gpu.global.max.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

// --- fences ------------------------------------------------------------------------------------

/// fence.acq_rel.sys: release for this thread's earlier accesses + acquire for its later ones, at
/// system scope. Orders store->store, load->load, load->store; NOT store->load (see fence_sc_sys).
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
/// fence.sc.sys (= __threadfence_system()): acq_rel plus store->load ordering, i.e. earlier stores
/// are performed at system scope before any later access of this thread.
__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }
/// fence.proxy.async.global: orders generic-proxy and async-proxy (TMA) accesses to global memory.
__device__ __forceinline__ void fence_proxy_async_global() {
#if SHOAL_PTX_SM90
  asm volatile("fence.proxy.async.global;" ::: "memory");
#else
  __trap();
#endif
}
/// fence.proxy.async.shared::cta: the same for this CTA's shared memory (e.g. mbarrier init).
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
#if SHOAL_PTX_SM90
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}
/// fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the async proxy.
__device__ __forceinline__ void fence_mbarrier_init_release_cluster() {
#if SHOAL_PTX_SM90
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// --- special registers -------------------------------------------------------------------------

/// %globaltimer: nanoseconds, a global clock (updated every ~1 us on some GPUs).
__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/// %laneid: this thread's lane in its warp.
__device__ __forceinline__ uint32_t lane_id() {
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
/// bar.sync id, nthreads: named barrier `id` (1..15; 0 is __syncthreads) over nthreads threads (a
/// multiple of 32), with __syncthreads' ordering among them. shoal::warps<N> uses it (scope.cuh).
__device__ __forceinline__ void bar_sync(uint32_t id, uint32_t nthreads) {
  asm volatile("bar.sync %0, %1;" : : "r"(id), "r"(nthreads) : "memory");
}

// --- weak vector loads/stores in the global state space (the copy engines' fast path) ----------

__device__ __forceinline__ uint4 ld_global_v4(const uint4* addr) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_global_v4(uint4* addr, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint64_t ld_global_b64(const uint64_t* addr) {
  uint64_t v;
  asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_global_b64(uint64_t* addr, uint64_t v) {
  asm volatile("st.global.u64 [%0], %1;" ::"l"(addr), "l"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_global_b32(const uint32_t* addr) {
  uint32_t v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_global_b32(uint32_t* addr, uint32_t v) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint16_t ld_global_b16(const uint16_t* addr) {
  uint16_t v;
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_global_b16(uint16_t* addr, uint16_t v) {
  asm volatile("st.global.u16 [%0], %1;" ::"l"(addr), "h"(v) : "memory");
}
__device__ __forceinline__ uint8_t ld_global_b8(const uint8_t* addr) {
  uint16_t v;
  asm volatile("ld.global.u8 %0, [%1];" : "=h"(v) : "l"(addr) : "memory");
  return static_cast<uint8_t>(v);
}
__device__ __forceinline__ void st_global_b8(uint8_t* addr, uint8_t v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(addr), "h"(static_cast<uint16_t>(v)) : "memory");
}

/// ld.acquire.sys.v2.u64: one 16-byte read of two 8-byte words (each single-copy atomic, the pair not), acquiring
/// (the proxy ring's reply lines, shoal/detail/proxy_ring.hpp: each word carries its own flag).
__device__ __forceinline__ void ld_acquire_sys_v2(const uint64_t* addr, uint64_t& a, uint64_t& b) {
  asm volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(addr) : "memory");
}
/// st.relaxed.sys.v2.u64: one 16-byte store of two 8-byte words.
__device__ __forceinline__ void st_relaxed_sys_v2(uint64_t* addr, uint64_t a, uint64_t b) {
  asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(addr), "l"(a), "l"(b) : "memory");
}

// --- LL lines: 16 bytes = two {data 4 B, flag 4 B} halves; each 8-byte half is single-copy atomic ---

/// st.volatile.global.v2.u64: the two 8-byte halves of an LL line (each half lands whole).
__device__ __forceinline__ void st_volatile_v2_b64(uint64_t* addr, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(addr), "l"(a), "l"(b) : "memory");
}
/// ld.volatile.global.v2.u64: a poll of an LL line (fresh from memory on every call).
__device__ __forceinline__ void ld_volatile_v2_b64(const uint64_t* addr, uint64_t& a, uint64_t& b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(addr) : "memory");
}

// --- mbarrier (shared::cta, 8 bytes, 8-byte aligned) -------------------------------------------

/// Shared-memory address of a generic pointer into this CTA's shared memory.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrive_count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrive_count) : "memory");
}
__device__ __forceinline__ void mbarrier_inval(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
/// One arrival plus `tx_bytes` expected transaction bytes (completed by cp.async.bulk complete_tx).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t tx_bytes) {
#if SHOAL_PTX_SM90
  asm volatile(
      "{\n\t.reg .b64 state;\n\t"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}" ::"r"(smem_addr(bar)),
      "r"(tx_bytes)
      : "memory");
#else
  __trap();
#endif
}
/// True once the phase with parity `phase_parity` has completed (acquire, CTA scope, by default).
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t phase_parity) {
  uint32_t done = 0;
#if SHOAL_PTX_SM90
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase_parity)
      : "memory");
#else
  __trap();
#endif
  return done != 0;
}

// --- TMA bulk copies (cp.async.bulk, async proxy) ----------------------------------------------
// Addresses 16-byte aligned, nbytes a multiple of 16.

/// Global -> this CTA's shared memory; completion counted on `bar` as transaction bytes.
__device__ __forceinline__ void cp_async_bulk_global_to_shared(void* smem_dst, const void* gmem_src, uint32_t nbytes,
                                                               uint64_t* bar) {
#if SHOAL_PTX_SM90
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(smem_dst)),
               "l"(gmem_src), "r"(nbytes), "r"(smem_addr(bar))
               : "memory");
#else
  __trap();
#endif
}
/// This CTA's shared memory -> global (a peer's heap); tracked by this thread's bulk async-groups.
__device__ __forceinline__ void cp_async_bulk_shared_to_global(void* gmem_dst, const void* smem_src, uint32_t nbytes) {
#if SHOAL_PTX_SM90
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem_dst), "r"(smem_addr(smem_src)),
               "r"(nbytes)
               : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cp_async_bulk_commit_group() {
#if SHOAL_PTX_SM90
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
  __trap();
#endif
}
/// Waits until at most kPending of this thread's bulk groups are pending, writes included.
template <int kPending>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
#if SHOAL_PTX_SM90
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
}
/// Waits until at most kPending groups still READ their source (shared memory reusable).
template <int kPending>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
#if SHOAL_PTX_SM90
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
}

}  // namespace shoal::ptx
