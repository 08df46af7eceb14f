// Scalar type codes for the generic (type-erased) host paths: the generated typed API passes
// scalar_of<T>() and pointers, and one implementation serves every type. Also the host-side
// atomic operations on shared memory that those paths use.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace shoal::detail {

/// floating with bytes == 2 is IEEE half (binary16); bfloat is bfloat16 (bytes == 2).
enum class scalar_kind : uint8_t { signed_int, unsigned_int, floating, bfloat };

struct scalar {
  scalar_kind kind;
  uint8_t bytes;  ///< 1, 2, 4, 8 (or 16 for long double, RMA only)
  constexpr bool operator==(const scalar&) const = default;
};

template <class T>
constexpr scalar scalar_of() {
  if constexpr (std::is_floating_point_v<T>)
    return {scalar_kind::floating, sizeof(T)};
  else if constexpr (std::is_signed_v<T>)
    return {scalar_kind::signed_int, sizeof(T)};
  else
    return {scalar_kind::unsigned_int, sizeof(T)};
}

/// IEEE binary16 bits to float (exact).
float half_to_float(uint16_t h);
/// float to IEEE binary16 bits, rounded to nearest even (NaN stays a quiet NaN, overflow gives inf).
uint16_t float_to_half(float f);

/// Atomic memory operations (OpenSHMEM names).
enum class amo_op : uint8_t {
  fetch,
  set,
  swap,
  compare_swap,
  fetch_add,
  add,
  fetch_inc,
  inc,
  fetch_and,
  and_,
  fetch_or,
  or_,
  fetch_xor,
  xor_,
};
const char* to_string(amo_op op);

/// Comparison for wait_until/test (SHOAL_CMP_* values).
bool compare(scalar type, const void* lhs, int cmp, const void* rhs);

/// Performs `op` atomically on `target` (shared memory the CPU can address) with sequentially
/// consistent ordering. `operand`/`compare_value` point to values of `type`; the old value is
/// written to `fetched` (may be null for non-fetching ops). Float add uses a CAS loop; IEEE half
/// ({floating, 2}) takes fetch, set, swap and (fetch_)add, the add in float rounded to nearest even.
void host_atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value, void* fetched);

/// Atomic load with acquire ordering of a value of `type` at `addr` into `out`.
void host_atomic_load(scalar type, const void* addr, void* out);

}  // namespace shoal::detail
