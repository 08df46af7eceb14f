// A channel's rows of several ranks as one list (detail::row_list): what the normal-mode kernels use to order
// the rows a receiving block copies out (dispatch) or a sending block returns (combine). Plain C++ as well as
// CUDA, so that a host test checks the mapping (tests/unit/ep_row_list_test.cc).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SHOAL_EP_HD __host__ __device__ __forceinline__
#else
#define SHOAL_EP_HD inline
#endif
#if defined(__CUDA_ARCH__)  // the device pass: the host compiler would warn about an unknown pragma
#define SHOAL_EP_UNROLL _Pragma("unroll")
#else
#define SHOAL_EP_UNROLL
#endif

namespace shoal::ep::detail {

/// Parts per rank of an interleaved row_list: 2^kInterleaveShift.
inline constexpr int kInterleaveShift = 6;

/// A channel's rows from (dispatch's receiver) or to (combine's sender) every rank, n[r] of rank r, as one list
/// in the order the channel handles them. Each rank's rows are cut into 2^shift parts of equal share, and the
/// list takes part b of every rank (in rank order) before part b + 1; within a rank, rows keep their order.
/// shift 0: rank after rank. With parts, the list keeps pace with every rank at once: a rank's peer produces
/// (or consumes) its rows over the whole call, so taking one rank's rows to the end first leaves the others'
/// waiting. Positions map to rows in closed form (a binary search over the parts), so no table is built.
/// n[r] * 2^shift must fit in 32 bits.
template <int kRanks>
struct row_list {
  int n[kRanks];
  int shift;

  /// Index among rank r's rows of the first row of its part b (b in [0, 2^shift]; part 2^shift begins at n[r]).
  SHOAL_EP_HD int part_begin(int r, int b) const {
    return static_cast<int>((static_cast<uint32_t>(b) * static_cast<uint32_t>(n[r])) >> shift);
  }
  /// List position of the first row of part b.
  SHOAL_EP_HD int list_begin(int b) const {
    int sum = 0;
    SHOAL_EP_UNROLL
    for (int r = 0; r < kRanks; ++r) sum += part_begin(r, b);
    return sum;
  }
  SHOAL_EP_HD int total() const {
    int sum = 0;
    SHOAL_EP_UNROLL
    for (int r = 0; r < kRanks; ++r) sum += n[r];
    return sum;
  }
  /// The part that holds list position i (0 <= i < total()): the last one that begins at or before i (a part
  /// that holds no row begins where the next one does, so the last such part is never empty).
  SHOAL_EP_HD int part_of(int i) const {
    int lo = 0, hi = (1 << shift) - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (list_begin(mid) <= i)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
  /// The row at list position i (0 <= i < total()): its rank r, and j, its index among rank r's rows.
  SHOAL_EP_HD void at(int i, int& r, int& j) const {
    const int b = part_of(i);
    int off = i - list_begin(b);
    r = 0, j = 0;
    SHOAL_EP_UNROLL
    for (int k = 0; k < kRanks; ++k) {
      const int first = part_begin(k, b), size = part_begin(k, b + 1) - first;
      if (off >= 0 && off < size) r = k, j = first + off;
      off -= size;
    }
  }
  /// Rows of rank r at list positions [0, i).
  SHOAL_EP_HD int count_before(int r, int i) const {
    if (i <= 0) return 0;
    const bool all = i >= total();
    const int b = all ? 0 : part_of(i);
    int off = all ? 0 : i - list_begin(b), count = 0;
    SHOAL_EP_UNROLL
    for (int k = 0; k < kRanks; ++k) {
      const int first = part_begin(k, b), size = part_begin(k, b + 1) - first;
      if (k == r) count = all ? n[k] : first + (off <= 0 ? 0 : off < size ? off : size);
      off -= size;
    }
    return count;
  }
};

}  // namespace shoal::ep::detail

#undef SHOAL_EP_HD
#undef SHOAL_EP_UNROLL
