#include "runtime/rma.hpp"

#include <cstring>

#include "common/check.hpp"
#include "runtime/wait.hpp"
#include "shoal/shoal.h"

namespace shoal::detail {

void check_pe(std::string_view call, int pe, int n_pes) {
  SHOAL_CHECK_ARG(pe >= 0 && pe < n_pes, call, "pe={} is out of range [0, {})", pe, n_pes);
}

void check_sig_op(std::string_view call, int sig_op) {
  SHOAL_CHECK_ARG(sig_op == SHOAL_SIGNAL_SET || sig_op == SHOAL_SIGNAL_ADD, call,
                  "sig_op={} is neither SHOAL_SIGNAL_SET nor SHOAL_SIGNAL_ADD", sig_op);
}

std::optional<uint64_t> check_contiguous(const symmetric_memory& memory, const peer_transport& transport,
                                         std::string_view call, int pe, size_t nbytes, size_t elem_align,
                                         named_arg local, named_arg symmetric) {
  check_pe(call, pe, transport.n_pes());
  if (nbytes == 0) return std::nullopt;
  SHOAL_CHECK_ARG(local.addr != nullptr, call, "{} is null", local.name);
  return memory.check_rma(call, symmetric.name, symmetric.addr, nbytes, elem_align);
}

void host_rma::put(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align, int pe,
                   bool nbi) {
  if (auto off =
          check_contiguous(memory_, transport_, call, pe, nbytes, elem_align, {source, "source"}, {dest, "dest"})) {
    if (nbi)
      transport_.put_nbi(call, pe, *off, source, nbytes);
    else
      transport_.put(call, pe, *off, source, nbytes);
  }
}

void host_rma::get(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align, int pe,
                   bool nbi) {
  if (auto off =
          check_contiguous(memory_, transport_, call, pe, nbytes, elem_align, {dest, "dest"}, {source, "source"})) {
    if (nbi)
      transport_.get_nbi(call, dest, pe, *off, nbytes);
    else
      transport_.get(call, dest, pe, *off, nbytes);
  }
}

namespace {
// Extent in bytes of nelems elements spaced `stride` elements apart (stride >= 1, nelems >= 1);
// UINT64_MAX when it does not fit in 64 bits (the bounds check then rejects it).
uint64_t strided_extent(ptrdiff_t stride, size_t nelems, size_t elem_bytes) {
  uint64_t span = 0, bytes = 0, total = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(nelems) - 1, static_cast<uint64_t>(stride), &span) ||
      __builtin_mul_overflow(span, static_cast<uint64_t>(elem_bytes), &bytes) ||
      __builtin_add_overflow(bytes, static_cast<uint64_t>(elem_bytes), &total))
    return UINT64_MAX;
  return total;
}
}  // namespace

std::optional<uint64_t> host_rma::strided_args(std::string_view call, int pe, ptrdiff_t dest_stride,
                                               ptrdiff_t source_stride, size_t nelems, size_t elem_bytes,
                                               named_arg local, named_arg symmetric, ptrdiff_t symmetric_stride) const {
  check_pe(call, pe, transport_.n_pes());
  SHOAL_CHECK_ARG(dest_stride >= 1, call, "dst={} must be at least 1", dest_stride);
  SHOAL_CHECK_ARG(source_stride >= 1, call, "sst={} must be at least 1", source_stride);
  if (nelems == 0) return std::nullopt;
  SHOAL_CHECK_ARG(local.addr != nullptr, call, "{} is null", local.name);
  return memory_.check_rma(call, symmetric.name, symmetric.addr, strided_extent(symmetric_stride, nelems, elem_bytes),
                           elem_bytes);
}

void host_rma::iput(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride,
                    ptrdiff_t source_stride, size_t nelems, size_t elem_bytes, int pe) {
  if (auto off = strided_args(call, pe, dest_stride, source_stride, nelems, elem_bytes, {source, "source"},
                              {dest, "dest"}, dest_stride))
    transport_.iput(call, pe, *off, source, dest_stride, source_stride, nelems, elem_bytes);
}

void host_rma::iget(std::string_view call, void* dest, const void* source, ptrdiff_t dest_stride,
                    ptrdiff_t source_stride, size_t nelems, size_t elem_bytes, int pe) {
  if (auto off = strided_args(call, pe, dest_stride, source_stride, nelems, elem_bytes, {dest, "dest"},
                              {source, "source"}, source_stride))
    transport_.iget(call, dest, pe, *off, dest_stride, source_stride, nelems, elem_bytes);
}

void host_rma::atomic(std::string_view call, amo_op op, scalar type, void* dest, const void* operand,
                      const void* compare_value, void* fetched, int pe) {
  check_pe(call, pe, transport_.n_pes());
  uint64_t off = memory_.check_rma(call, "dest", dest, type.bytes, type.bytes);
  transport_.atomic(call, pe, off, op, type, operand, compare_value, fetched);
}

// ---------------------------------------------------------------------------------------------
// signals

void host_rma::put_signal(std::string_view call, void* dest, const void* source, size_t nbytes, size_t elem_align,
                          uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  check_pe(call, pe, transport_.n_pes());
  check_sig_op(call, sig_op);
  uint64_t sig_off = memory_.check_rma(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  uint64_t off = 0;
  if (nbytes > 0) {
    SHOAL_CHECK_ARG(source != nullptr, call, "source is null");
    off = memory_.check_rma(call, "dest", dest, nbytes, elem_align);
  }
  transport_.put_signal(call, pe, off, source, nbytes, sig_off, signal, sig_op == SHOAL_SIGNAL_ADD);
}

void host_rma::signal_op(std::string_view call, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  put_signal(call, nullptr, nullptr, 0, 1, sig_addr, signal, sig_op, pe);
}

uint64_t host_rma::signal_fetch(std::string_view call, const uint64_t* sig_addr) {
  memory_.check_rma(call, "sig_addr", sig_addr, sizeof(uint64_t), alignof(uint64_t));
  uint64_t v;
  transport_.ops().load(scalar_of<uint64_t>(), sig_addr, &v);
  return v;
}

uint64_t host_rma::signal_wait_until(std::string_view call, uint64_t* sig_addr, int cmp, uint64_t value) {
  wait(call, scalar_of<uint64_t>(), sig_addr, 1, nullptr, nullptr, cmp, &value, false, wait_mode::all, false);
  return signal_fetch(call, sig_addr);
}

size_t host_rma::wait(std::string_view call, scalar type, void* ivars, size_t nelems, const int* status,
                      size_t* indices, int cmp, const void* values, bool vector, wait_mode mode, bool test_only) {
  SHOAL_CHECK_ARG(cmp >= SHOAL_CMP_EQ && cmp <= SHOAL_CMP_GE, call, "cmp={} is not a SHOAL_CMP_* value", cmp);
  SHOAL_CHECK_ARG(values != nullptr, call, "cmp_value{} is null", vector ? "s" : "");
  if (nelems == 0) return mode == wait_mode::any ? SIZE_MAX : (mode == wait_mode::all ? 1 : 0);
  size_t ivars_bytes = 0;
  SHOAL_CHECK_ARG(!__builtin_mul_overflow(nelems, size_t{type.bytes}, &ivars_bytes), call,
                  "ivars={} with nelems={} x {} bytes overflows size_t", ivars, nelems, type.bytes);
  memory_.check_rma(call, "ivars", ivars, ivars_bytes, type.bytes);
  SHOAL_CHECK_ARG(mode != wait_mode::some || indices != nullptr, call, "indices is null");
  auto* base = static_cast<char*>(ivars);
  auto value_of = [&](size_t i) { return static_cast<const char*>(values) + (vector ? i * type.bytes : 0); };
  auto satisfied = [&](size_t i) {
    alignas(8) unsigned char seen[8];
    transport_.ops().load(type, base + i * type.bytes, seen);
    return compare(type, seen, cmp, value_of(i));
  };
  bool any_active = false;
  for (size_t i = 0; i < nelems; ++i) any_active |= status == nullptr || status[i] == 0;
  if (!any_active) return mode == wait_mode::any ? SIZE_MAX : (mode == wait_mode::all ? 1 : 0);

  backoff pause(test_only ? std::chrono::milliseconds(0) : wait_timeout_, call);
  while (true) {
    size_t found = 0, pending = 0, first = SIZE_MAX, first_pending = SIZE_MAX;
    for (size_t i = 0; i < nelems; ++i) {
      if (status != nullptr && status[i] != 0) continue;
      if (satisfied(i)) {
        if (mode == wait_mode::some) indices[found] = i;
        if (first == SIZE_MAX) first = i;
        ++found;
      } else {
        ++pending;
        if (first_pending == SIZE_MAX) first_pending = i;
      }
    }
    switch (mode) {
      case wait_mode::all:
        if (pending == 0) return 1;
        break;
      case wait_mode::any:
        if (first != SIZE_MAX) return first;
        break;
      case wait_mode::some:
        if (found > 0) return found;
        break;
    }
    if (test_only) return mode == wait_mode::any ? SIZE_MAX : 0;
    if (!pause.pause()) {
      alignas(8) unsigned char seen[8] = {};
      transport_.ops().load(type, base + first_pending * type.bytes, seen);
      uint64_t seen_bits = 0, want_bits = 0;
      std::memcpy(&seen_bits, seen, type.bytes);
      std::memcpy(&want_bits, value_of(first_pending), type.bytes);
      SHOAL_THROW(errc::timeout, call,
                  "waited {} ms (SHOAL_WAIT_TIMEOUT) on PE {}: ivars[{}] at {} is 0x{:x}, waiting for cmp {} 0x{:x}",
                  wait_timeout_.count(), my_pe_, first_pending, static_cast<void*>(base + first_pending * type.bytes),
                  seen_bits, cmp, want_bits);
    }
  }
}

}  // namespace shoal::detail
