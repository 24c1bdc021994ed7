// The reproducer of docs/gpu.md's one-rank ncclAvg finding: which one-rank
// reduce-scatters leave elements unwritten, by communicator mode, op, count
// and byte offsets. Build: g++ -O2 -std=c++17 nccl_one_rank_avg.cpp
// -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnccl -lcudart; pack it
// with ../shared/tools/gpu-bundle and run it on the GPU machine.
#include <cmath>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <nccl.h>

#define CK(x) do { auto e = (x); if (e != cudaSuccess) { std::printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

static ncclResult_t wait_comm(ncclComm_t c) {
  ncclResult_t st = ncclInProgress;
  do { ncclResult_t e = ncclCommGetAsyncError(c, &st); if (e != ncclSuccess) return e; } while (st == ncclInProgress);
  return st;
}

int main() {
  int v = 0; ncclGetVersion(&v); std::printf("nccl runtime %d\n", v);
  const size_t cap = 200000;
  float *in_base, *out_base;
  CK(cudaMalloc(&in_base, cap * 4 + 64)); CK(cudaMalloc(&out_base, cap * 4 + 64));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int blocking : {1, 0}) {
    ncclUniqueId id; ncclGetUniqueId(&id);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER; cfg.blocking = blocking;
    ncclComm_t comm;
    ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &cfg);
    if (r == ncclInProgress) r = wait_comm(comm);
    if (r != ncclSuccess) { std::printf("init %d\n", r); return 1; }
    for (int opi = 0; opi < 2; ++opi) {
      ncclRedOp_t op = opi ? ncclSum : ncclAvg;
      for (size_t n : {100003ul, 100000ul, 4099ul, 7ul}) {
        for (int ioff : {0, 4, 8, 12}) for (int ooff : {0, 4, 8, 12}) {
          float* in = (float*)((char*)in_base + ioff); float* out = (float*)((char*)out_base + ooff);
          std::vector<float> h(n, 1.5f), o(n);
          CK(cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice));
          std::vector<float> nan(n, NAN);
          CK(cudaMemcpy(out, nan.data(), n * 4, cudaMemcpyHostToDevice));
          CK(cudaDeviceSynchronize());  // pageable H2D copies may still be in flight
          r = ncclReduceScatter(in, out, n, ncclFloat32, op, comm, s);
          if (r == ncclInProgress) r = wait_comm(comm);
          if (r != ncclSuccess) { std::printf("rs %d\n", r); return 1; }
          CK(cudaStreamSynchronize(s));
          CK(cudaMemcpy(o.data(), out, n * 4, cudaMemcpyDeviceToHost));
          size_t bad = 0, first = n;
          for (size_t i = 0; i < n; ++i) if (!(o[i] == 1.5f)) { if (!bad) first = i; ++bad; }
          if (bad || (ioff == 0 && ooff == 0))
            std::printf("blocking=%d op=%s n=%zu in+%d out+%d: %zu wrong (first %zu)\n", blocking,
                        opi ? "sum" : "avg", n, ioff, ooff, bad, first);
        }
      }
    }
    ncclCommDestroy(comm);
  }
  std::printf("done\n");
  return 0;
}
