// Device atomics on 2 GPUs, both API forms: every OpenSHMEM AMO plus float/double add/fetch_add,
// issued concurrently by every thread of both PEs at a word on each PE (half the threads target
// PE 0, half PE 1, so each word takes local and remote updates at once). Checked exactly: final
// values, and for fetching forms the linearization (the fetched values, sorted, must form the one
// chain that the operations imply: init, init+v0, init+v0+v1, ... for add; a permutation for swap).
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "facade_api.cuh"
#include "gpu_env.hpp"
#include "handle_api.cuh"

namespace shoal_test {
namespace {

enum class op {
  fetch,
  set,
  swap,
  compare_swap,
  add,
  fetch_add,
  inc,
  fetch_inc,
  and_,
  fetch_and,
  or_,
  fetch_or,
  xor_,
  fetch_xor
};

const char* op_name(op o) {
  switch (o) {
    case op::fetch:
      return "atomic_fetch";
    case op::set:
      return "atomic_set";
    case op::swap:
      return "atomic_swap";
    case op::compare_swap:
      return "atomic_compare_swap";
    case op::add:
      return "atomic_add";
    case op::fetch_add:
      return "atomic_fetch_add";
    case op::inc:
      return "atomic_inc";
    case op::fetch_inc:
      return "atomic_fetch_inc";
    case op::and_:
      return "atomic_and";
    case op::fetch_and:
      return "atomic_fetch_and";
    case op::or_:
      return "atomic_or";
    case op::fetch_or:
      return "atomic_fetch_or";
    case op::xor_:
      return "atomic_xor";
    case op::fetch_xor:
      return "atomic_fetch_xor";
  }
  return "?";
}

constexpr bool is_bitwise(op o) {
  return o == op::and_ || o == op::fetch_and || o == op::or_ || o == op::fetch_or || o == op::xor_ ||
         o == op::fetch_xor;
}
constexpr bool fetches(op o) {
  return o == op::fetch || o == op::swap || o == op::compare_swap || o == op::fetch_add || o == op::fetch_inc ||
         o == op::fetch_and || o == op::fetch_or || o == op::fetch_xor;
}

template <class T>
constexpr unsigned kBits = sizeof(T) * 8;

/// Threads per PE: bitwise ops give each (PE, thread) its own bit of the target word; CAS loops
/// contend, so fewer; the rest use four blocks' worth.
template <class T>
unsigned threads_for(op o) {
  if (is_bitwise(o)) return kBits<T>;
  if (o == op::compare_swap) return 64;
  return 512;
}

template <class T>
__host__ __device__ T all_ones() {
  return static_cast<T>(~static_cast<T>(0));
}

/// The word's value before the kernel.
template <class T>
__host__ __device__ T initial(op o) {
  if constexpr (std::is_integral_v<T>) {
    if (o == op::and_ || o == op::fetch_and) return all_ones<T>();
    if (o == op::or_ || o == op::fetch_or) return T(0);
    if (o == op::xor_ || o == op::fetch_xor) return static_cast<T>(0xA5A5A5A5A5A5A5A5ull);  // bits of both values
  }
  return o == op::fetch ? T(12345) : T(1000);
}

/// Bit owned by thread t of PE q among the threads that target one word (bitwise ops).
__host__ __device__ inline unsigned bit_of(int q, unsigned t, int npes, unsigned bits) {
  return t / npes + static_cast<unsigned>(q) * (bits / npes);
}

/// The operand thread t of PE q uses (unique per (q, t) where that matters).
template <class T>
__host__ __device__ T operand(op o, int q, unsigned t, int npes, unsigned nthreads) {
  if (o == op::add || o == op::fetch_add) return T(1 + q * nthreads + t);
  if (o == op::set || o == op::swap) return T(2000 + q * nthreads + t);
  if constexpr (std::is_integral_v<T>) {
    const T bit = static_cast<T>(T(1) << bit_of(q, t, npes, kBits<T>));
    if (o == op::and_ || o == op::fetch_and) return static_cast<T>(~bit);
    if (o == op::or_ || o == op::fetch_or || o == op::xor_ || o == op::fetch_xor) return bit;
  }
  return T(0);
}

/// Thread t targets the word on PE t % n_pes, applies its op, and logs the fetched value.
/// compare_swap: increment by CAS until it succeeds (logs the value it replaced); bounded at 10 s.
template <class Api, class T, op O>
__global__ void amo_kernel(Api api, T* word, T* fetched, unsigned nthreads, int* stuck) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nthreads) return;
  const int me = api.my_pe(), npes = api.n_pes();
  const int pe = static_cast<int>(t % npes);
  const T v = operand<T>(O, me, t, npes, nthreads);
  T f{};
  if constexpr (O == op::fetch) f = api.atomic_fetch(word, pe);
  if constexpr (O == op::set) api.atomic_set(word, v, pe);
  if constexpr (O == op::swap) f = api.atomic_swap(word, v, pe);
  if constexpr (O == op::add) api.atomic_add(word, v, pe);
  if constexpr (O == op::fetch_add) f = api.atomic_fetch_add(word, v, pe);
  if constexpr (O == op::inc) api.atomic_inc(word, pe);
  if constexpr (O == op::fetch_inc) f = api.atomic_fetch_inc(word, pe);
  if constexpr (O == op::and_) api.atomic_and(word, v, pe);
  if constexpr (O == op::fetch_and) f = api.atomic_fetch_and(word, v, pe);
  if constexpr (O == op::or_) api.atomic_or(word, v, pe);
  if constexpr (O == op::fetch_or) f = api.atomic_fetch_or(word, v, pe);
  if constexpr (O == op::xor_) api.atomic_xor(word, v, pe);
  if constexpr (O == op::fetch_xor) f = api.atomic_fetch_xor(word, v, pe);
  if constexpr (O == op::compare_swap) {
    const uint64_t start = globaltimer_ns();
    T cur = api.atomic_fetch(word, pe);
    for (;;) {
      const T old = api.atomic_compare_swap(word, cur, T(cur + 1), pe);
      if (old == cur) break;
      cur = old;
      if (globaltimer_ns() - start > 10'000'000'000ull) {
        atomicAdd(stuck, 1);
        break;
      }
    }
    f = cur;
  }
  fetched[t] = f;
  api.quiet();
}

template <class T>
std::string str(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return format("%.3f", static_cast<double>(v));
  } else if constexpr (std::is_signed_v<T>) {
    return format("%lld", static_cast<long long>(v));
  } else {
    return format("0x%llx", static_cast<unsigned long long>(v));
  }
}

template <class T>
unsigned popcount_of(T v) {
  using U = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
  U u;
  std::memcpy(&u, &v, sizeof(T));
  return static_cast<unsigned>(__builtin_popcountll(u));
}

/// One update that reached this PE's word: the operand and (for fetching ops) what it fetched.
template <class T>
struct update {
  T operand;
  T fetched;
  int pe;
  unsigned thread;
};

template <class T>
void check_bits(const std::string& what, op o, T final_value, std::vector<update<T>> ups);

template <class T>
void check_word(const std::string& what, op o, T final_value, std::vector<update<T>> ups) {
  const T init = initial<T>(o);
  const size_t n = ups.size();
  auto describe = [&](const update<T>& u) {
    return format("PE %d thread %u (operand %s, fetched %s)", u.pe, u.thread, str(u.operand).c_str(),
                  str(u.fetched).c_str());
  };
  switch (o) {
    case op::fetch: {
      for (auto& u : ups)
        if (u.fetched != init) {
          ADD_FAILURE() << format("%s: %s; expected %s", what.c_str(), describe(u).c_str(), str(init).c_str());
          return;
        }
      if (final_value != init)
        ADD_FAILURE() << format("%s: word changed to %s by fetches", what.c_str(), str(final_value).c_str());
      return;
    }
    case op::set: {
      bool found = false;
      for (auto& u : ups) found |= u.operand == final_value;
      if (!found)
        ADD_FAILURE() << format("%s: final %s is none of the %zu values set", what.c_str(), str(final_value).c_str(),
                                n);
      return;
    }
    case op::swap: {
      // {init} + every operand == every fetched value + the final value (as multisets).
      std::vector<T> in{init}, out{final_value};
      for (auto& u : ups) in.push_back(u.operand), out.push_back(u.fetched);
      std::sort(in.begin(), in.end());
      std::sort(out.begin(), out.end());
      if (in != out) {
        size_t k = 0;
        while (k < in.size() && in[k] == out[k]) ++k;
        ADD_FAILURE() << format(
            "%s: values in (init + operands) and out (fetched + final) differ; first at sorted position %zu: in %s, "
            "out %s",
            what.c_str(), k, str(in[k]).c_str(), str(out[k]).c_str());
      }
      return;
    }
    case op::add:
    case op::inc: {
      T expected = init;
      for (auto& u : ups) expected = T(expected + (o == op::inc ? T(1) : u.operand));
      if (final_value != expected)
        ADD_FAILURE() << format("%s: final %s, expected %s after %zu updates", what.c_str(), str(final_value).c_str(),
                                str(expected).c_str(), n);
      return;
    }
    case op::fetch_add:
    case op::fetch_inc:
    case op::compare_swap: {
      // Sorted by fetched value, each update must have seen exactly the previous one's result.
      for (auto& u : ups)
        if (o != op::fetch_add) u.operand = T(1);
      std::sort(ups.begin(), ups.end(), [](auto& a, auto& b) { return a.fetched < b.fetched; });
      T expect = init;
      for (size_t k = 0; k < n; ++k) {
        if (ups[k].fetched != expect) {
          ADD_FAILURE() << format("%s: linearization broken at step %zu of %zu: %s, expected it to fetch %s",
                                  what.c_str(), k, n, describe(ups[k]).c_str(), str(expect).c_str());
          return;
        }
        expect = T(expect + ups[k].operand);
      }
      if (final_value != expect)
        ADD_FAILURE() << format("%s: final %s, expected %s", what.c_str(), str(final_value).c_str(),
                                str(expect).c_str());
      return;
    }
    case op::and_:
    case op::or_:
    case op::xor_:
    case op::fetch_and:
    case op::fetch_or:
    case op::fetch_xor: {
      if constexpr (std::is_integral_v<T>) check_bits(what, o, final_value, std::move(ups));
      return;
    }
  }
}

/// and/or/xor: every bit of the word is flipped by exactly one update.
template <class T>
void check_bits(const std::string& what, op o, T final_value, std::vector<update<T>> ups) {
  const T init = initial<T>(o);
  const size_t n = ups.size();
  auto describe = [&](const update<T>& u) {
    return format("PE %d thread %u (operand %s, fetched %s)", u.pe, u.thread, str(u.operand).c_str(),
                  str(u.fetched).c_str());
  };
  // Every bit flipped once: and clears all, or sets all, xor complements.
  const T expected = o == op::and_ || o == op::fetch_and ? T(0)
                     : o == op::or_ || o == op::fetch_or ? all_ones<T>()
                                                         : static_cast<T>(~init);
  if (n != kBits<T>)
    ADD_FAILURE() << format("%s: %zu updates reached the word, expected %u", what.c_str(), n, kBits<T>);
  if (final_value != expected)
    ADD_FAILURE() << format("%s: final %s, expected %s", what.c_str(), str(final_value).c_str(), str(expected).c_str());
  if (!fetches(o)) return;
  // Fetched values: each saw exactly k earlier flips (k = 0..n-1, each once), never its own bit,
  // and the state before it plus its own flip is what the next one saw.
  auto flips = [&](T v) { return popcount_of(static_cast<T>(v ^ init)); };
  std::sort(ups.begin(), ups.end(), [&](auto& a, auto& b) { return flips(a.fetched) < flips(b.fetched); });
  for (size_t k = 0; k < n; ++k) {
    const T flip = o == op::fetch_and ? static_cast<T>(~ups[k].operand) : ups[k].operand;
    if (flips(ups[k].fetched) != k || (ups[k].fetched & flip) != (init & flip)) {
      ADD_FAILURE() << format("%s: fetched value %zu of %zu is not the state after %zu earlier flips: %s", what.c_str(),
                              k, n, k, describe(ups[k]).c_str());
      return;
    }
    const T next = static_cast<T>(ups[k].fetched ^ flip);
    if (k + 1 < n && next != ups[k + 1].fetched) {
      ADD_FAILURE() << format("%s: chain broken after step %zu: %s flips to %s but the next update fetched %s",
                              what.c_str(), k, describe(ups[k]).c_str(), str(next).c_str(),
                              str(ups[k + 1].fetched).c_str());
      return;
    }
  }
}

struct amo_buffers {
  void* word = nullptr;     // symmetric: the target word (16 bytes, one T used)
  void* fetched = nullptr;  // symmetric: each thread's fetched value, this PE's threads
  int* stuck = nullptr;     // cudaMalloc: CAS loops that gave up
};

amo_buffers& amo_bufs() {
  static amo_buffers b = [] {
    amo_buffers x;
    x.word = shoal_malloc(16);
    x.fetched = shoal_malloc(512 * 8);
    GT_CUDA(cudaMalloc(&x.stuck, sizeof(int)));
    if (x.word == nullptr || x.fetched == nullptr) ADD_FAILURE() << "shoal_malloc returned NULL";
    return x;
  }();
  return b;
}

template <class Api, class T, op O>
void amo_case(Api api, const char* type_name) {
  amo_buffers& b = amo_bufs();
  T* word = static_cast<T*>(b.word);
  T* fetched = static_cast<T*>(b.fetched);
  const unsigned nthreads = threads_for<T>(O);
  const std::string what = format("%s %s_%s on PE %d's word (%u threads per PE, %d PEs)", Api::kName, type_name,
                                  op_name(O), me(), nthreads, npes());
  const T init = initial<T>(O);
  GT_CUDA(cudaMemcpy(word, &init, sizeof(T), cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemset(fetched, kPoison, 512 * 8));
  GT_CUDA(cudaMemset(b.stuck, 0, sizeof(int)));
  sync_all_pes();
  amo_kernel<Api, T, O><<<(nthreads + 127) / 128, 128>>>(api, word, fetched, nthreads, b.stuck);
  GT_LAUNCHED(what.c_str());
  sync_all_pes();

  int stuck = 0;
  GT_CUDA(cudaMemcpy(&stuck, b.stuck, sizeof(int), cudaMemcpyDeviceToHost));
  if (stuck != 0) ADD_FAILURE() << format("%s: %d compare_swap loop(s) made no progress for 10 s", what.c_str(), stuck);
  T final_value;
  GT_CUDA(cudaMemcpy(&final_value, word, sizeof(T), cudaMemcpyDeviceToHost));
  // Every PE's log of fetched values (read through the peer mapping), keeping the updates that
  // targeted this PE's word.
  std::vector<update<T>> ups;
  for (int q = 0; q < npes(); ++q) {
    // Through the peer mapping, or (proxy peers: no mapping) a host get.
    const void* log = q == me() ? fetched : shoal_ptr(fetched, q);
    std::vector<T> f(nthreads);
    if (log != nullptr)
      GT_CUDA(cudaMemcpy(f.data(), log, sizeof(T) * nthreads, cudaMemcpyDeviceToHost));
    else
      shoal_getmem(f.data(), fetched, sizeof(T) * nthreads, q);
    for (unsigned t = 0; t < nthreads; ++t)
      if (static_cast<int>(t % npes()) == me()) ups.push_back({operand<T>(O, q, t, npes(), nthreads), f[t], q, t});
  }
  if (ups.size() == static_cast<size_t>(nthreads)) check_word(what, O, final_value, std::move(ups));
  sync_all_pes();  // nobody resets its word or log while a peer still reads it
}

template <class Api, class T>
void common_ops(Api api, const char* type_name) {
  amo_case<Api, T, op::fetch>(api, type_name);
  amo_case<Api, T, op::set>(api, type_name);
  amo_case<Api, T, op::swap>(api, type_name);
  amo_case<Api, T, op::add>(api, type_name);
  amo_case<Api, T, op::fetch_add>(api, type_name);
}
template <class Api, class T>
void integer_ops(Api api, const char* type_name) {
  common_ops<Api, T>(api, type_name);
  amo_case<Api, T, op::compare_swap>(api, type_name);
  amo_case<Api, T, op::inc>(api, type_name);
  amo_case<Api, T, op::fetch_inc>(api, type_name);
}
template <class Api, class T>
void bitwise_ops(Api api, const char* type_name) {
  integer_ops<Api, T>(api, type_name);
  amo_case<Api, T, op::and_>(api, type_name);
  amo_case<Api, T, op::fetch_and>(api, type_name);
  amo_case<Api, T, op::or_>(api, type_name);
  amo_case<Api, T, op::fetch_or>(api, type_name);
  amo_case<Api, T, op::xor_>(api, type_name);
  amo_case<Api, T, op::fetch_xor>(api, type_name);
}

template <class Api>
void all_types(Api api) {
  integer_ops<Api, int>(api, "int");
  integer_ops<Api, long long>(api, "longlong");
  bitwise_ops<Api, unsigned int>(api, "uint");
  bitwise_ops<Api, unsigned long long>(api, "ulonglong");
  bitwise_ops<Api, uint64_t>(api, "uint64");
  common_ops<Api, float>(api, "float");
  common_ops<Api, double>(api, "double");
}

TEST(amo_gpu, atomics_handle) { all_types(handle_api{device_handle()}); }
TEST(amo_gpu, atomics_facade) { all_types(facade_api{}); }

// compare_swap that must fail: returns the current value and leaves the word alone.
template <class Api>
__global__ void cas_miss_kernel(Api api, unsigned long long* word, unsigned long long* out, int pe) {
  out[0] = api.atomic_compare_swap(word, 1ull, 2ull, pe);  // word holds 77: no swap
  out[1] = api.atomic_fetch(word, pe);
  out[2] = api.atomic_compare_swap(word, 77ull, 78ull, pe);  // swaps
  out[3] = api.atomic_fetch(word, pe);
}

template <class Api>
void cas_miss(Api api) {
  amo_buffers& b = amo_bufs();
  auto* word = static_cast<unsigned long long*>(b.word);
  auto* out = static_cast<unsigned long long*>(b.fetched);
  const unsigned long long v = 77;
  GT_CUDA(cudaMemcpy(word, &v, sizeof(v), cudaMemcpyHostToDevice));
  sync_all_pes();
  // Only PE 0 runs it, at PE 1's word: a single remote thread sees a deterministic sequence.
  if (me() == 0) {
    cas_miss_kernel<Api><<<1, 1>>>(api, word, out, 1);
    GT_LAUNCHED("cas_miss_kernel");
    unsigned long long seen[4];
    GT_CUDA(cudaMemcpy(seen, out, sizeof(seen), cudaMemcpyDeviceToHost));
    const unsigned long long expected[4] = {77, 77, 77, 78};
    for (int i = 0; i < 4; ++i)
      if (seen[i] != expected[i])
        ADD_FAILURE() << format(
            "%s compare_swap on PE 1: step %d returned %llu, expected %llu (steps: cas(1->2) miss, fetch, "
            "cas(77->78) hit, fetch)",
            Api::kName, i, seen[i], expected[i]);
  }
  sync_all_pes();
}

TEST(amo_gpu, compare_swap_miss_handle) { cas_miss(handle_api{device_handle()}); }
TEST(amo_gpu, compare_swap_miss_facade) { cas_miss(facade_api{}); }

}  // namespace
}  // namespace shoal_test
