// NVSHMEM-spelled CUDA program, compiled against shoal's <nvshmem.h>/<nvshmemx.h> (CI compiles and links it; it runs
// on GPU PEs only): a device call of every family at thread, warp and block scope, device-side team queries, the
// host on-stream families, cooperative (collective) launch (also with a launch configuration), both init modes,
// run-time-loaded modules and the NVSHMEM status/version queries; NVSHMEM 3.8's half atomics, maxloc and counted
// signal reset. main() exits 77 (skipped) without a GPU.
#include <cuda.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstring>

__global__ void rma_kernel(int* data, long* ldata, uint64_t* sig, int* out) {
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), peer = (me + 1) % npes;
  __shared__ __align__(16) unsigned char smem[256];
  nvshmemx_give_smem(smem, sizeof(smem));  // NVSHMEM 3.8 shared-memory hint (shoal does not stage through it)
  nvshmem_int_p(data, me, peer);
  out[0] = nvshmem_int_g(data, peer);
  nvshmem_long_put(ldata, ldata + 4, 4, peer);
  nvshmem_long_get_nbi(ldata + 8, ldata, 4, peer);
  nvshmem_putmem_nbi(data + 1, data, sizeof(int), peer);
  nvshmem_int_iput(data + 2, data, 2, 1, 2, peer);
  nvshmemx_int_put_warp(data, data + 4, 4, peer);
  nvshmemx_long_get_block(ldata, ldata + 4, 4, peer);
  nvshmemx_putmem_signal_nbi_block(data, data + 4, 16, sig, 1, NVSHMEM_SIGNAL_ADD, peer);
  nvshmem_long_put_signal(ldata, ldata + 4, 4, sig, 1, NVSHMEM_SIGNAL_SET, peer);
  nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, peer);
  nvshmem_fence();
  nvshmem_quiet();
  nvshmemx_flush();
  out[1] = static_cast<int>(nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 1));
  out[2] = static_cast<int>(nvshmem_signal_fetch(sig));
  int* direct = static_cast<int*>(nvshmem_ptr(data, peer));
  if (direct != nullptr) out[3] = *direct;
  nvshmemx_release_smem();
}

__global__ void amo_sync_kernel(unsigned long long* counter, int* flags, double* d, int* out) {
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
  nvshmem_ulonglong_atomic_fetch_add(counter, 1ULL, 0);
  nvshmem_ulonglong_atomic_or(counter, 2ULL, 0);
  // flags[0] starts at 0 on every PE: the CAS from the PE before sets it to that PE + 1 (never 0), so the wait
  // below ends on every PE.
  out[0] = static_cast<int>(nvshmem_int_atomic_compare_swap(flags, 0, me + 1, (me + 1) % npes));
  nvshmemx_double_atomic_add(d, 0.5, 0);
  out[1] = static_cast<int>(nvshmem_double_atomic_fetch(d, 0));
  nvshmem_int_wait_until(flags, NVSHMEM_CMP_NE, 0);
  int status[2] = {0, 1};
  size_t idx[2];
  nvshmem_int_wait_until_all(flags, 2, status, NVSHMEM_CMP_GE, 0);
  out[2] = static_cast<int>(nvshmem_int_wait_until_any(flags, 2, status, NVSHMEM_CMP_GE, 0));
  out[3] = static_cast<int>(nvshmem_int_test_some(flags, 2, idx, status, NVSHMEM_CMP_GE, 0));
  out[4] = nvshmem_int_test(flags, NVSHMEM_CMP_EQ, 0);
  nvshmem_barrier_all();
  nvshmemx_barrier_all_block();
  nvshmem_sync_all();
}

__global__ void coll_kernel(nvshmem_team_t team, float* dst, const float* src, int* idst, const int* isrc, int* out) {
  out[0] = nvshmem_team_my_pe(team);
  out[1] = nvshmem_team_n_pes(team);
  out[2] = nvshmem_team_translate_pe(team, 0, NVSHMEM_TEAM_WORLD);
  int major = 0, minor = 0, patch = 0;
  nvshmem_info_get_version(&major, &minor);
  nvshmemx_vendor_get_version_info(&major, &minor, &patch);
  out[3] = major * 100 + minor;
  nvshmem_float_sum_reduce(team, dst, src, 4);
  nvshmemx_float_max_reduce_block(team, dst, src, 4);
  nvshmemx_int_and_reduce_warp(team, idst, isrc, 4);
  nvshmem_int_broadcast(team, idst, isrc, 4, 0);
  nvshmemx_int_fcollect_block(team, idst, isrc, 1);
  nvshmem_int_alltoall(team, idst, isrc, 1);
  nvshmem_team_sync(team);
  nvshmemx_barrier_block(team);
  if (threadIdx.x < 128) nvshmemx_barrier_warpgroup(team);
  if (out[0] < 0) nvshmem_global_exit(3);
}

// NVSHMEM 3.8: half atomics, counted-signal reset, double2 maxloc, SAME_MYPE_NODE on the device.
__global__ void nv38_kernel(__half* h, uint64_t* sig, double2* mdst, const double2* msrc, int* out) {
  const int me = nvshmem_my_pe(), peer = (me + 1) % nvshmem_n_pes();
  if (threadIdx.x == 0) {
    nvshmemx_half_atomic_add(h, __float2half(1.0f), peer);
    out[0] = static_cast<int>(__half2float(nvshmemx_half_atomic_fetch_add(h, __float2half(1.0f), peer)));
    nvshmem_half_atomic_set(h + 1, __float2half(2.0f), peer);
    out[1] = static_cast<int>(__half2float(nvshmem_half_atomic_swap(h + 1, __float2half(3.0f), peer)));
    out[2] = static_cast<int>(__half2float(nvshmem_half_atomic_fetch(h, peer)));
    nvshmemx_signal_counted_reset(sig);
    out[3] = nvshmem_team_n_pes(NVSHMEMX_TEAM_SAME_MYPE_NODE);
  }
  nvshmemx_double2_maxloc_reduce_block(NVSHMEM_TEAM_WORLD, mdst, msrc, 4);
}

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no usable GPU (nv_device_all)\n");
    return 77;
  }
  // init with attributes (MPI communicator when MPI is in the process; else the launcher's environment)
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  void* mpi_comm = nullptr;  // an MPI_Comm* in an MPI program
  if (mpi_comm != nullptr) {
    nvshmemx_set_attr_mpi_comm_args(mpi_comm, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr) != NVSHMEMX_SUCCESS) return 1;
  } else {
    nvshmem_init();
  }
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  int* data = static_cast<int*>(nvshmem_calloc(16, sizeof(int)));
  long* ldata = static_cast<long*>(nvshmem_calloc(16, sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(nvshmem_calloc(2, sizeof(uint64_t)));
  float* fbuf = static_cast<float*>(nvshmem_calloc(8, sizeof(float)));
  int* out = static_cast<int*>(nvshmem_calloc(8, sizeof(int)));

  // on-stream RMA, signals, waits and sync
  const int peer = (me + 1) % npes;
  nvshmemx_int_p_on_stream(data, 7, peer, stream);
  nvshmemx_int_put_on_stream(data + 1, data, 1, peer, stream);
  nvshmemx_long_put_nbi_on_stream(ldata, ldata + 4, 4, peer, stream);
  nvshmemx_long_iget_on_stream(ldata + 8, ldata, 2, 2, 2, peer, stream);
  nvshmemx_putmem_signal_on_stream(data + 2, data, sizeof(int), sig, 1, NVSHMEM_SIGNAL_ADD, peer, stream);
  nvshmemx_int_put_signal_nbi_on_stream(data + 3, data, 1, sig + 1, 1, NVSHMEM_SIGNAL_SET, peer, stream);
  nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, 1, stream);
  nvshmemx_uint64_wait_until_on_stream(sig + 1, NVSHMEM_CMP_EQ, 1, stream);
  int status[2] = {0, 0};
  nvshmemx_uint64_wait_until_all_on_stream(sig, 2, status, NVSHMEM_CMP_GE, 1, stream);
  nvshmemx_quiet_on_stream(stream);
  nvshmemx_flush_on_stream(stream);
  nvshmemx_sync_all_on_stream(stream);
  nvshmemx_barrier_all_on_stream(stream);
  nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, fbuf, fbuf + 4, 4, stream);
  const int g = nvshmemx_int_g_on_stream(data, peer, stream);

  // shared-memory hints: NVSHMEM's sizes, which programs use to size launches
  if (nvshmemx_ask_smem(NVSHMEMX_SMEM_RECOMMENDED) != 65536 || nvshmemx_ask_smem(NVSHMEMX_SMEM_MINIMUM) != 32768)
    return 6;

  // cooperative launch of kernels that synchronize across PEs
  int grid = 0;
  void* rma_args[] = {&data, &ldata, &sig, &out};
  if (nvshmemx_collective_launch_query_gridsize(reinterpret_cast<const void*>(rma_kernel), dim3(32), rma_args, 0,
                                                &grid) != NVSHMEMX_SUCCESS ||
      grid < 1)
    return 2;
  if (nvshmemx_collective_launch(reinterpret_cast<const void*>(rma_kernel), dim3(1), dim3(32), rma_args, 0, stream) !=
      NVSHMEMX_SUCCESS)
    return 3;
  if (nvshmemx_collective_launch(reinterpret_cast<const void*>(rma_kernel), dim3(grid + 1), dim3(32), rma_args, 0,
                                 stream) != NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED)
    return 4;  // more blocks than can be co-resident: refused, with a message
  unsigned long long* counter = static_cast<unsigned long long*>(nvshmem_calloc(1, sizeof(unsigned long long)));
  double* dval = static_cast<double*>(nvshmem_calloc(1, sizeof(double)));
  int* flags = static_cast<int*>(nvshmem_calloc(2, sizeof(int)));  // zero on every PE (calloc is collective)
  amo_sync_kernel<<<1, 1, 0, stream>>>(counter, flags, dval, out);
  coll_kernel<<<1, 128, 0, stream>>>(NVSHMEM_TEAM_WORLD, fbuf, fbuf + 4, data, data + 8, out);
  cudaStreamSynchronize(stream);
  __half* h = static_cast<__half*>(nvshmem_calloc(2, sizeof(__half)));
  double2* mbuf = static_cast<double2*>(nvshmem_calloc(8, sizeof(double2)));
  void* nv38_args[] = {&h, &sig, &mbuf, &mbuf, &out};
  nvshmemx_collective_launch_attr_t launch_attr = {};
  launch_attr.cuda_config.gridDim = dim3(1);
  launch_attr.cuda_config.blockDim = dim3(64);
  launch_attr.cuda_config.stream = stream;
  nv38_args[3] = &mbuf;  // in place (symmetric dest and source may be the same buffer)
  if (nvshmemx_collective_launch_attr(&launch_attr, reinterpret_cast<const void*>(nv38_kernel), nv38_args) !=
      NVSHMEMX_SUCCESS)
    return 6;
  cudaStreamSynchronize(stream);
  nvshmemx_signal_counted_reset(sig);  // host form
  nvshmem_barrier_all();

  // kernels loaded at run time get the world (a module that was not built with the compat headers is refused)
  // (the driver API through the runtime, so that the program starts on machines without libcuda)
  CUmodule module = nullptr;
  void* load = nullptr;
  void* unload = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion("cuModuleLoad", &load, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      cudaGetDriverEntryPointByVersion("cuModuleUnload", &unload, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      reinterpret_cast<CUresult (*)(CUmodule*, const char*)>(load)(&module, "nv_module.cubin") == CUDA_SUCCESS) {
    if (nvshmemx_cumodule_init(module) != NVSHMEMX_SUCCESS) return 5;
    nvshmemx_cumodule_finalize(module);
    reinterpret_cast<CUresult (*)(CUmodule)>(unload)(module);
  }
  std::printf("nv_device_all: PE %d of %d: g=%d %s\n", me, npes, g, nvshmemx_status_string(NVSHMEMX_SUCCESS));
  nvshmem_free(mbuf);
  nvshmem_free(h);
  nvshmem_free(flags);
  nvshmem_free(dval);
  nvshmem_free(counter);
  nvshmem_free(out);
  nvshmem_free(fbuf);
  nvshmem_free(sig);
  nvshmem_free(ldata);
  nvshmem_free(data);
  nvshmem_finalize();
  return 0;
}
