#include "transport/scalar.hpp"

#include <bit>

#include "common/check.hpp"
#include "shoal/types.h"

namespace shoal::detail {

// IEEE binary16 <-> float, exactly (half_to_float) and to nearest even (float_to_half).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  // inf and NaN (payload kept)
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | mant << 13);
  // zero and subnormals: mant * 2^-24, exact in float
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -v : v;
  }
  return std::bit_cast<float>(sign | (exp + 112) << 23 | mant << 13);  // exponent bias 15 -> 127
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  // NaN: quiet, sign and the payload's top bits kept
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  // >= 65520 (the largest half, 65504, plus half an ulp; the tie goes to the even inf): inf
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  // normal half (>= 2^-14): round to nearest even on bit 13 (a carry moves into the exponent), rebias
  if (ax >= 0x38800000u) {
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded - 0x38000000u) >> 13);
  }
  // <= 2^-25, half the smallest subnormal (the tie goes to the even 0): zero
  if (ax <= 0x33000000u) return sign;
  // subnormal half: the value in units of 2^-24, to nearest even (2^-14 - tiny may round up to 0x0400)
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - (ax >> 23);  // 14 .. 24
  uint32_t q = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t tie = 1u << (shift - 1);
  if (rest > tie || (rest == tie && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

const char* to_string(amo_op op) {
  switch (op) {
    case amo_op::fetch:
      return "fetch";
    case amo_op::set:
      return "set";
    case amo_op::swap:
      return "swap";
    case amo_op::compare_swap:
      return "compare_swap";
    case amo_op::fetch_add:
      return "fetch_add";
    case amo_op::add:
      return "add";
    case amo_op::fetch_inc:
      return "fetch_inc";
    case amo_op::inc:
      return "inc";
    case amo_op::fetch_and:
      return "fetch_and";
    case amo_op::and_:
      return "and";
    case amo_op::fetch_or:
      return "fetch_or";
    case amo_op::or_:
      return "or";
    case amo_op::fetch_xor:
      return "fetch_xor";
    case amo_op::xor_:
      return "xor";
  }
  return "?";
}

namespace {

template <class T>
T read_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
bool compare_typed(T a, int cmp, T b) {
  switch (cmp) {
    case SHOAL_CMP_EQ:
      return a == b;
    case SHOAL_CMP_NE:
      return a != b;
    case SHOAL_CMP_GT:
      return a > b;
    case SHOAL_CMP_LE:
      return a <= b;
    case SHOAL_CMP_LT:
      return a < b;
    case SHOAL_CMP_GE:
      return a >= b;
  }
  return false;
}

// Calls f.template operator()<T>() with T the C++ type of `type`.
template <class F>
decltype(auto) dispatch(scalar type, F&& f) {
  switch (type.kind) {
    case scalar_kind::signed_int:
      switch (type.bytes) {
        case 1:
          return f.template operator()<int8_t>();
        case 2:
          return f.template operator()<int16_t>();
        case 4:
          return f.template operator()<int32_t>();
        case 8:
          return f.template operator()<int64_t>();
      }
      break;
    case scalar_kind::unsigned_int:
      switch (type.bytes) {
        case 1:
          return f.template operator()<uint8_t>();
        case 2:
          return f.template operator()<uint16_t>();
        case 4:
          return f.template operator()<uint32_t>();
        case 8:
          return f.template operator()<uint64_t>();
      }
      break;
    case scalar_kind::floating:
      switch (type.bytes) {
        case 4:
          return f.template operator()<float>();
        case 8:
          return f.template operator()<double>();
      }
      break;  // 2-byte half: host_atomic has its own path (no waits on it; reductions combine it in src/coll)
    case scalar_kind::bfloat:
      break;
  }
  SHOAL_THROW(errc::internal, "shoal", "unsupported scalar type (kind {}, {} bytes)", static_cast<int>(type.kind),
              type.bytes);
}

}  // namespace

bool compare(scalar type, const void* lhs, int cmp, const void* rhs) {
  return dispatch(type, [&]<class T>() { return compare_typed<T>(read_as<T>(lhs), cmp, read_as<T>(rhs)); });
}

void host_atomic_load(scalar type, const void* addr, void* out) {
  dispatch(type, [&]<class T>() {
    T v = std::atomic_ref<T>(*static_cast<T*>(const_cast<void*>(addr))).load(std::memory_order_acquire);
    std::memcpy(out, &v, sizeof(T));
  });
}

namespace {

// IEEE half (2-byte floating): fetch/set/swap on the bits, add through a compare-and-swap loop in
// float rounded to nearest even (the device's atom.add.noftz.f16 result).
void host_atomic_half(amo_op op, void* target, const void* operand, void* fetched) {
  std::atomic_ref<uint16_t> ref(*static_cast<uint16_t*>(target));
  const uint16_t value = operand != nullptr ? read_as<uint16_t>(operand) : uint16_t{0};
  uint16_t old = 0;
  switch (op) {
    case amo_op::fetch:
      old = ref.load();
      break;
    case amo_op::set:
      ref.store(value);
      break;
    case amo_op::swap:
      old = ref.exchange(value);
      break;
    case amo_op::fetch_add:
    case amo_op::add:
      old = ref.load(std::memory_order_relaxed);
      while (!ref.compare_exchange_weak(old, float_to_half(half_to_float(old) + half_to_float(value)))) {
      }
      break;
    default:
      SHOAL_THROW(errc::internal, "shoal", "atomic {} is not defined on half", to_string(op));
  }
  if (fetched != nullptr) std::memcpy(fetched, &old, sizeof(old));
}

}  // namespace

void host_atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value, void* fetched) {
  if (type == scalar{scalar_kind::floating, 2}) return host_atomic_half(op, target, operand, fetched);
  dispatch(type, [&]<class T>() {
    std::atomic_ref<T> ref(*static_cast<T*>(target));
    T value = operand != nullptr ? read_as<T>(operand) : T{};
    T old{};
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case amo_op::fetch:
          old = ref.load();
          break;
        case amo_op::set:
          ref.store(value);
          break;
        case amo_op::swap:
          old = ref.exchange(value);
          break;
        case amo_op::compare_swap: {
          // Bitwise comparison, as the device does: compare the representation.
          using bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
          std::atomic_ref<bits> raw(*static_cast<bits*>(target));
          bits expected = read_as<bits>(compare_value);
          raw.compare_exchange_strong(expected, read_as<bits>(operand));
          std::memcpy(&old, &expected, sizeof(T));
          break;
        }
        case amo_op::fetch_add:
        case amo_op::add: {
          old = ref.load(std::memory_order_relaxed);
          while (!ref.compare_exchange_weak(old, old + value)) {
          }
          break;
        }
        default:
          SHOAL_THROW(errc::internal, "shoal", "atomic {} is not defined on floating types", to_string(op));
      }
    } else {
      switch (op) {
        case amo_op::fetch:
          old = ref.load();
          break;
        case amo_op::set:
          ref.store(value);
          break;
        case amo_op::swap:
          old = ref.exchange(value);
          break;
        case amo_op::compare_swap: {
          T expected = read_as<T>(compare_value);
          ref.compare_exchange_strong(expected, value);
          old = expected;
          break;
        }
        case amo_op::fetch_add:
        case amo_op::add:
          old = ref.fetch_add(value);
          break;
        case amo_op::fetch_inc:
        case amo_op::inc:
          old = ref.fetch_add(T{1});
          break;
        case amo_op::fetch_and:
        case amo_op::and_:
          old = ref.fetch_and(value);
          break;
        case amo_op::fetch_or:
        case amo_op::or_:
          old = ref.fetch_or(value);
          break;
        case amo_op::fetch_xor:
        case amo_op::xor_:
          old = ref.fetch_xor(value);
          break;
      }
    }
    if (fetched != nullptr) std::memcpy(fetched, &old, sizeof(T));
  });
}

}  // namespace shoal::detail
