// Host-issued RMA, atomics, signals and the wait/test family: each call validates its arguments
// (errors name the public call) and then reaches the PE through the transport.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/memory.hpp"
#include "transport/scalar.hpp"
#include "transport/transport.hpp"

namespace shoal::detail {

/// pe in [0, n_pes), or errc::invalid_argument naming `call`.
void check_pe(std::string_view call, int pe, int n_pes);
/// SHOAL_SIGNAL_SET or SHOAL_SIGNAL_ADD, or errc::invalid_argument naming `call`.
void check_sig_op(std::string_view call, int sig_op);

/// A pointer argument and its name in errors.
struct named_arg {
  const void* addr;
  const char* name;
};
/// The checks of a contiguous transfer with `pe`: pe in range, `local` (private side) not null, and
/// `symmetric` a symmetric range of nbytes aligned to elem_align. Its heap offset, or nullopt when
/// nbytes is 0 (nothing to move, nothing else checked).
std::optional<uint64_t> check_contiguous(const symmetric_memory& memory, const peer_transport& transport,
                                         std::string_view call, int pe, size_t nbytes, size_t elem_align,
                                         named_arg local, named_arg symmetric);

class host_rma {
 public:
  host_rma(int my_pe, symmetric_memory& memory, peer_transport& transport, std::chrono::milliseconds wait_timeout)
      : my_pe_(my_pe), memory_(memory), transport_(transport), wait_timeout_(wait_timeout) {}

  // RMA: `elem_align` is the alignment the typed call requires (1 for *mem).
  /// `nbi`: the _nbi forms (completion at the next quiet; the proxy path then returns before it).
  void put(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align, int pe,
           bool nbi = false);
  void get(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align, int pe,
           bool nbi = false);
  void iput(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t nelems, size_t elem_bytes, int pe);
  void iget(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride, ptrdiff_t source_stride,
            size_t nelems, size_t elem_bytes, int pe);

  // atomics: values are passed by pointer as `type`
  void atomic(std::string_view call, amo_op op, scalar type, void* dest, const void* operand, const void* compare_value,
              void* fetched, int pe);

  // signals
  void put_signal(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align,
                  uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
  void signal_op(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
  uint64_t signal_fetch(std::string_view call, const uint64_t* sig_addr);
  /// Waits (bounded) until the local signal word compares true with `value`; returns the value seen.
  uint64_t signal_wait_until(std::string_view call, uint64_t* sig_addr, int cmp, uint64_t value);

  /// The wait/test family in one place. `ivars`: nelems local symmetric words of `type`;
  /// `status` (may be null): nonzero entries are excluded; `values`: one value, or nelems when
  /// `vector`. Returns: all → 0 / 1 (test: 1 if satisfied); any → the index satisfied, or SIZE_MAX;
  /// some → the number of indices written to `indices`.
  enum class wait_mode { all, any, some };
  size_t wait(std::string_view call, scalar type, void* ivars, size_t nelems, const int* status, size_t* indices,
              int cmp, const void* values, bool vector, wait_mode mode, bool test_only);

  /// fence and quiet: host-issued operations complete in order, so both complete everything.
  void fence(std::string_view) { transport_.quiet(); }
  void quiet(std::string_view) { transport_.quiet(); }

 private:
  /// The checks of iput and iget (pe, strides, `local` not null, `symmetric` spaced
  /// `symmetric_stride` apart in one allocation); its heap offset, or nullopt when nelems is 0.
  std::optional<uint64_t> strided_args(std::string_view call, int pe, ptrdiff_t dest_stride, ptrdiff_t source_stride,
                                       size_t nelems, size_t elem_bytes, named_arg local, named_arg symmetric,
                                       ptrdiff_t symmetric_stride) const;

  const int my_pe_;
  symmetric_memory& memory_;
  peer_transport& transport_;
  const std::chrono::milliseconds wait_timeout_;
};

}  // namespace shoal::detail
