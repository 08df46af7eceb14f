#include "transport/scalar.hpp"

#include "common/check.hpp"
#include "shoal/types.h"

namespace shoal::detail {

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
      break;  // 2-byte half: no host atomics or waits on it (reductions combine it in src/coll)
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

void host_atomic(amo_op op, scalar type, void* target, const void* operand, const void* compare_value, void* fetched) {
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
