// On-stream team collectives, part 2 (same executable as coll_stream_gpu_test.cu): bad calls in
// SHOAL_ERRORS_RETURN mode return nonzero and add nothing to a capturing stream; the blocking host
// collectives (shoal_float_sum_reduce, ...) on the GPU heap.
#include "coll_stream_cases.cuh"

namespace shoal_test {
namespace {

// ---- errors -----------------------------------------------------------------------------------

/// `call(stream)` must fail: return nonzero and add nothing to the stream (checked by capturing it).
template <class F>
void expect_rejected(const std::string& what, F&& call) {
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  GT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const int rc = call(s);
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  if (end != cudaSuccess) {
    ADD_FAILURE() << format("%s: the capture broke (%s): the failing call still tried stream work", what.c_str(),
                            cudaGetErrorString(end));
    (void)cudaGetLastError();
  }
  size_t nodes = 0;
  if (graph != nullptr) {
    GT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    GT_CUDA(cudaGraphDestroy(graph));
  }
  if (rc == 0) ADD_FAILURE() << format("%s: returned 0, expected a SHOAL_ERR_* code", what.c_str());
  if (nodes != 0) ADD_FAILURE() << format("%s: returned %d but enqueued %zu node(s)", what.c_str(), rc, nodes);
  GT_CUDA(cudaStreamDestroy(s));
}

TEST(coll_stream_gpu, errors_return_nonzero_and_enqueue_nothing) {
  stream_env& e = env();
  const int n = npes();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);
  float* sym_src = reinterpret_cast<float*>(e.src + kGuard);
  float* sym_dst = reinterpret_cast<float*>(e.dst + kGuard);
  float* local = nullptr;  // device memory outside the symmetric heap
  GT_CUDA(cudaMalloc(&local, 4096 * sizeof(float)));
  constexpr size_t kSmall = 64 * 1024;  // elements of a symmetric block too short for n blocks
  auto* small = static_cast<float*>(shoal_malloc(kSmall * sizeof(float)));
  if (small == nullptr) ADD_FAILURE() << "shoal_malloc returned NULL";
  sync_all_pes();
  // Every PE makes the same bad calls, so none of them waits for a peer.
  expect_rejected("float sum reduce, dest not symmetric (cudaMalloc)", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(SHOAL_TEAM_WORLD, local, sym_src, 1023, s);
  });
  expect_rejected("float sum reduce, source not symmetric (cudaMalloc)", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(SHOAL_TEAM_WORLD, sym_dst, local, 1023, s);
  });
  expect_rejected("float sum reducescatter, source shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_float_sum_reducescatter_on_stream(SHOAL_TEAM_WORLD, sym_dst, small, kSmall, s);
  });
  expect_rejected("fcollectmem, dest shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, small, sym_src, kSmall * sizeof(float), s);
  });
  expect_rejected("alltoallmem, source shorter than n_pes blocks", [&](cudaStream_t s) {
    return shoalx_alltoallmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, small, kSmall * sizeof(float), s);
  });
  expect_rejected("float sum reduce, dest misaligned by 2 bytes", [&](cudaStream_t s) {
    return shoalx_float_sum_reduce_on_stream(
        SHOAL_TEAM_WORLD, reinterpret_cast<float*>(reinterpret_cast<char*>(sym_dst) + 2), sym_src, 1023, s);
  });
  expect_rejected("double broadcast, source misaligned by 4 bytes", [&](cudaStream_t s) {
    return shoalx_double_broadcast_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<double*>(sym_dst),
                                             reinterpret_cast<const double*>(e.src + kGuard + 4), 99, 0, s);
  });
  for (int root : {-1, n, n + 7}) {
    expect_rejected(format("broadcastmem on WORLD, PE_root %d", root), [&](cudaStream_t s) {
      return shoalx_broadcastmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, sym_src, 100, root, s);
    });
    expect_rejected(format("broadcastmem on WORLD-reversed, PE_root %d", root), [&](cudaStream_t s) {
      return shoalx_broadcastmem_on_stream(e.team[1].handle, sym_dst, sym_src, 1000000, root, s);
    });
  }
  expect_rejected("int broadcast on the 1-PE team, PE_root 1", [&](cudaStream_t s) {
    return shoalx_int_broadcast_on_stream(e.team[2].handle, reinterpret_cast<int*>(sym_dst),
                                          reinterpret_cast<const int*>(sym_src), 10, 1, s);
  });
  for (shoal_team_t bad :
       {SHOAL_TEAM_INVALID, static_cast<shoal_team_t>(-7), static_cast<shoal_team_t>(SHOAL_MAX_TEAMS - 2),
        static_cast<shoal_team_t>(SHOAL_MAX_TEAMS), static_cast<shoal_team_t>(1000)}) {
    expect_rejected(format("float sum reduce on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_float_sum_reduce_on_stream(bad, sym_dst, sym_src, 1023, s); });
    expect_rejected(format("alltoallmem on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_alltoallmem_on_stream(bad, sym_dst, sym_src, 100, s); });
    expect_rejected(format("barrier_on_stream on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_barrier_on_stream(bad, s); });
    expect_rejected(format("team_sync_on_stream on team %d", bad),
                    [&](cudaStream_t s) { return shoalx_team_sync_on_stream(bad, s); });
  }
  expect_rejected("double sum reduce, nreduce * 8 overflows size_t", [&](cudaStream_t s) {
    return shoalx_double_sum_reduce_on_stream(SHOAL_TEAM_WORLD, reinterpret_cast<double*>(sym_dst),
                                              reinterpret_cast<const double*>(sym_src), SIZE_MAX / 4, s);
  });
  expect_rejected("fcollectmem, nelems * n_pes overflows size_t", [&](cudaStream_t s) {
    return shoalx_fcollectmem_on_stream(SHOAL_TEAM_WORLD, sym_dst, sym_src, SIZE_MAX / 2 + 3, s);
  });
  shoal_set_error_mode(previous);
  sync_all_pes();
  shoal_free(small);
  GT_CUDA(cudaFree(local));
  // The rejected calls left no trace: the teams' next collectives (LL and direct) still agree.
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 3; ++ti) {
    reduce_case<float>(op_sum, false, ti, 1023, false, 0);
    reduce_case<int32_t>(op_xor, false, ti, b / 2 + 1, false, 0);
    move_case(mv_broadcast, 0, ti, 5000, e.team[ti].n - 1, false);
  }
}

/// and/or/xor of floating-point types exist under no C name (the on-stream path rejects them too):
/// the library must not export such symbols. dlsym on libshoal's own handle, with a positive control.
TEST(coll_stream_gpu, no_bitwise_ops_on_floating_types) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&shoalx_int_and_reduce_on_stream), &info) == 0 || info.dli_fname == nullptr) {
    if (me() == 0) std::printf("note: dladdr cannot place shoalx_int_and_reduce_on_stream; check skipped\n");
    return;
  }
  void* lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr || dlsym(lib, "shoalx_int_and_reduce_on_stream") == nullptr) {
    if (me() == 0) std::printf("note: libshoal's symbols are not visible to dlsym (static link?); check skipped\n");
    if (lib != nullptr) dlclose(lib);
    return;
  }
  for (const char* type : {"float", "double", "half", "bfloat16", "longdouble"})
    for (const char* op : {"and", "or", "xor"})
      for (const char* form : {"reduce", "reducescatter"}) {
        const std::string name = format("shoalx_%s_%s_%s_on_stream", type, op, form);
        if (dlsym(lib, name.c_str()) != nullptr)
          ADD_FAILURE() << format("libshoal exports %s (bitwise op on a floating type)", name.c_str());
      }
  dlclose(lib);
}

// ---- the blocking host collectives on the GPU heap ----------------------------------------------

/// shoal_<T>_<op>_reduce & co. called from the host on GPU-heap buffers: they are to run the on-stream
/// path and synchronize. SHOAL_ERR_UNSUPPORTED is reported as "[NOT ROUTED YET]".
TEST(coll_stream_gpu, blocking_host_collectives_on_gpu_heap) {
  stream_env& e = env();
  const int previous = shoal_set_error_mode(SHOAL_ERRORS_RETURN);  // an unsupported call must not stop the job
  const size_t b = e.ll_bytes;
  for (int ti = 0; ti < 2; ++ti) {
    reduce_case_with<float>(
        "shoal_float_sum_reduce", true,
        [](shoal_team_t team, float* d, const float* s, size_t n, cudaStream_t) {
          return shoal_float_sum_reduce(team, d, s, n);
        },
        op_sum, false, ti, 1023, false, 0);
    reduce_case_with<int32_t>(
        "shoal_int32_xor_reduce", true,
        [](shoal_team_t team, int32_t* d, const int32_t* s, size_t n, cudaStream_t) {
          return shoal_int32_xor_reduce(team, d, s, n);
        },
        op_xor, false, ti, b / 2 + 1, false, 0);
    reduce_case_with<float>(
        "shoal_float_min_reduce (in place)", true,
        [](shoal_team_t team, float* d, const float* s, size_t n, cudaStream_t) {
          return shoal_float_min_reduce(team, d, s, n);
        },
        op_min, false, ti, 777, true, 0);
    reduce_case_with<double>(
        "shoal_double_max_reducescatter", true,
        [](shoal_team_t team, double* d, const double* s, size_t n, cudaStream_t) {
          return shoal_double_max_reducescatter(team, d, s, n);
        },
        op_max, true, ti, 333, false, 0);
    reduce_case_with<__half>(
        "shoal_half_sum_reduce", true,
        [](shoal_team_t team, __half* d, const __half* s, size_t n, cudaStream_t) {
          return shoal_half_sum_reduce(team, d, s, n);
        },
        op_sum, false, ti, b + 1, false, 0);
    reduce_case_with<uint8_t>(
        "shoal_uint8_prod_reducescatter", true,
        [](shoal_team_t team, uint8_t* d, const uint8_t* s, size_t n, cudaStream_t) {
          return shoal_uint8_prod_reducescatter(team, d, s, n);
        },
        op_prod, true, ti, b + 5, false, 0);
    const int root = e.team[ti].n - 1;
    move_case_with(
        "shoal_broadcastmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t) {
          return shoal_broadcastmem(team, d, s, n, r);
        },
        mv_broadcast, 0, ti, 1000, root, false);
    move_case_with(
        "shoal_int64_broadcast", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int r, cudaStream_t) {
          return shoal_int64_broadcast(team, static_cast<int64_t*>(d), static_cast<const int64_t*>(s), n, r);
        },
        mv_broadcast, 8, ti, b / 8 + 1, 0, false);
    move_case_with(
        "shoal_fcollectmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int, cudaStream_t) {
          return shoal_fcollectmem(team, d, s, n);
        },
        mv_fcollect, 0, ti, b + 3, 0, false);
    move_case_with(
        "shoal_alltoallmem", true,
        [](shoal_team_t team, void* d, const void* s, size_t n, int, cudaStream_t) {
          return shoal_alltoallmem(team, d, s, n);
        },
        mv_alltoall, 0, ti, 777, 0, false);
    const shoal_team_t team = e.team[ti].handle;
    call_ok(format("shoal_barrier(%s)", e.team[ti].name), shoal_barrier(team), true);
    call_ok(format("shoal_team_sync(%s)", e.team[ti].name), shoal_team_sync(team), true);
  }
  shoal_set_error_mode(previous);
}

}  // namespace
}  // namespace shoal_test
