// Bodies of the device signal calls (<shoal/device/signal.cuh>): put-with-signal (data, scope
// barrier, then rank 0 releases the signal), signal_op. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/detail/device_common.cuh"
#include "shoal/detail/device_copy.cuh"
#include "shoal/detail/device_proxy.cuh"
#include "shoal/device/ptx.cuh"
#include "shoal/device/scope.cuh"
#include "shoal/device_world.hpp"
#include "shoal/types.h"

namespace shoal::detail {

__device__ __forceinline__ void check_sig_op(const device_world& w, int sig_op, const char* call) {
#if SHOAL_DEVICE_CHECKS
  if (sig_op != SHOAL_SIGNAL_SET && sig_op != SHOAL_SIGNAL_ADD)
    device_fail_arg(w.report_box, call, w.my_pe, "sig_op", sig_op);
#else
  (void)w, (void)sig_op, (void)call;
#endif
}

/// Release-signal: st.release.sys (SET) or red.release.sys.add (ADD) on the peer's signal word.
__device__ __forceinline__ void signal_release(uint64_t* remote_sig, uint64_t signal, int sig_op) {
  if (sig_op == SHOAL_SIGNAL_ADD) {
    ptx::red_add_release_sys(remote_sig, signal);
  } else {
    ptx::st_release_sys(remote_sig, signal);
  }
}

/// How put_signal_local copies: copy_to_remote (any buffers; kCopyLean: 2 loads in flight per thread, the cold
/// path's), copy_width<16> (co16 buffers, global source: thread and warp scope's inline copy, as their put's),
/// copy_vec16 (vec16_ok buffers: the block put's copy, 4 loads in flight per thread) or copy_small (one pass: at most
/// 16 bytes per rank of the scope).
enum class signal_copy { generic, lean, co16, vec16, small };

/// put-with-signal to a load/store peer of node-local index `local`: data (spread over the scope, weak stores) ->
/// scope barrier -> rank 0 releases the signal, the data copied as kCopy says.
template <signal_copy kCopy, class Scope>
__device__ __forceinline__ void put_signal_local(const device_world& w, int64_t local, void* dest, const void* source,
                                                 size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op) {
  uint64_t* remote_sig = local_peer_ptr(w, sig_addr, local);
  if constexpr (kCopy == signal_copy::vec16) {
    copy_vec16<Scope, kPutLeadLoads>(local_peer_ptr(w, dest, local), source, nbytes);
  } else if constexpr (kCopy == signal_copy::small) {
    copy_small<Scope>(local_peer_ptr(w, dest, local), source, nbytes);
  } else if constexpr (kCopy == signal_copy::co16) {
    copy_width<Scope, 16, true, true>(static_cast<char*>(local_peer_ptr(w, dest, local)),
                                      static_cast<const char*>(source), nbytes);
  } else if constexpr (kCopy == signal_copy::lean) {
    copy_to_remote<Scope, kCopyLean>(local_peer_ptr(w, dest, local), source, nbytes);
  } else {
    copy_to_remote<Scope>(local_peer_ptr(w, dest, local), source, nbytes);
  }
  Scope::sync();  // every rank's stores happen before rank 0's release (causality through the barrier)
  if (Scope::rank() == 0) signal_release(remote_sig, signal, sig_op);
}

/// The proxy branch of putmem_signal_cold, a function of its own so that putmem_signal_cold keeps nothing live
/// across it (with whole-program compilation a callee's registers are allocated above those its caller keeps live).
template <bool kNbi, class Scope>
__device__ __noinline__ void putmem_signal_proxy(const device_world* w, void* dest, const void* source, size_t nbytes,
                                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                                 const char* call) {
  proxy_put_signal<Scope>(*w, kNbi, dest, source, nbytes, sig_addr, signal, sig_op, pe, call);
}

/// The cold part of putmem_signal: a load/store peer outside the world's direct run, or a copy the hot path does
/// not take, gets the load/store put-with-signal with the lean copy; a proxy peer one put_signal descriptor (kNbi:
/// not waited for, putmem_signal_proxy); anything else reports and traps (peer_route). Never inlined, the world
/// passed by value: a kernel that signals in a loop keeps none of this code or its argument set-up.
template <bool kNbi, class Scope>
__device__ __noinline__ void putmem_signal_cold(device_world w, void* dest, const void* source, size_t nbytes,
                                                uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                                const char* call) {
  const int64_t local = peer_route(w, pe, call);
  if (local < 0) return putmem_signal_proxy<kNbi, Scope>(&w, dest, source, nbytes, sig_addr, signal, sig_op, pe, call);
  put_signal_local<signal_copy::lean, Scope>(w, local, dest, source, nbytes, sig_addr, signal, sig_op);
}

/// put-with-signal. kNbi: the _nbi form (differs only for proxy peers). For a peer of the world's direct run, kFastCopy
/// (the default) at the wide scopes (block, warps<N>): data of at most 16 bytes per rank take copy_small inline (one
/// pass), larger vec16_ok buffers copy_vec16 inline, as the block put does, and any other size putmem_signal_cold;
/// thread and warp scope: buffers co-aligned modulo 16 with a global source take copy_width<16> inline, as their put
/// does, others putmem_signal_cold; kFastCopy false: copy_to_remote inline. Any other peer: putmem_signal_cold.
template <bool kNbi = false, class Scope, bool kFastCopy = true>
__device__ __forceinline__ void putmem_signal(Scope, const device_world& w, void* dest, const void* source,
                                              size_t nbytes, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                              const char* call) {
  check_sig_op(w, sig_op, call);
  const int32_t local = peer_local_or_cold(w, pe);
  if constexpr (kFastCopy && Scope::kWide) {
    if (local >= 0) {
      if (nbytes <= small_copy_bytes<Scope>())
        return put_signal_local<signal_copy::small, Scope>(w, local, dest, source, nbytes, sig_addr, signal, sig_op);
      if (vec16_ok<Scope>(dest, source, nbytes))
        return put_signal_local<signal_copy::vec16, Scope>(w, local, dest, source, nbytes, sig_addr, signal, sig_op);
    }
  } else if constexpr (kFastCopy) {
    if (local >= 0 && co16_ok(dest, source) && __isGlobal(source))
      return put_signal_local<signal_copy::co16, Scope>(w, local, dest, source, nbytes, sig_addr, signal, sig_op);
  } else {
    if (local >= 0)
      return put_signal_local<signal_copy::generic, Scope>(w, local, dest, source, nbytes, sig_addr, signal, sig_op);
  }
  putmem_signal_cold<kNbi, Scope>(w, dest, source, nbytes, sig_addr, signal, sig_op, pe, call);
}

/// Block put-with-signal through the TMA ring, then thread 0 releases the signal: the ring's
/// wait_group 0 + proxy fence order the bulk writes before thread 0's release.
template <int kStages, int kStageBytes>
__device__ __forceinline__ void putmem_signal_tma(const device_world& w, void* dest, const void* source, size_t nbytes,
                                                  uint64_t* sig_addr, uint64_t signal, int sig_op, int pe, void* smem,
                                                  const char* call) {
  check_sig_op(w, sig_op, call);
  const int64_t local = peer_route(w, pe, call);
  if (local < 0)
    return proxy_put_signal<block_scope>(w, false, dest, source, nbytes, sig_addr, signal, sig_op, pe, call);
  uint64_t* remote_sig = local_peer_ptr(w, sig_addr, local);
  copy_to_remote_block_tma<kStages, kStageBytes>(local_peer_ptr(w, dest, local), source, nbytes, smem);
  if (block_scope::rank() == 0) signal_release(remote_sig, signal, sig_op);
}

/// signal_op: st.relaxed.sys (SET) or red.relaxed.sys.add (ADD) on the peer's signal word.
__device__ __forceinline__ void signal_op(const device_world& w, uint64_t* sig_addr, uint64_t signal, int sig_op,
                                          int pe, const char* call) {
  check_sig_op(w, sig_op, call);
  const int32_t local = peer_route(w, pe, call);
  if (local < 0) return proxy_signal_op(w, sig_addr, signal, sig_op, pe, call);
  uint64_t* remote = local_peer_ptr(w, sig_addr, local);
  if (sig_op == SHOAL_SIGNAL_ADD) {
    ptx::red_add_relaxed_sys(remote, signal);
  } else {
    ptx::st_relaxed_sys(remote, signal);
  }
}

}  // namespace shoal::detail
