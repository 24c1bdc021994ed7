#pragma once

namespace dtrain {

/// Threads OpenBLAS uses for each GEMM in this process. OpenBLAS starts one
/// per core by default; ranks sharing a host should split the cores between
/// them (two spinning thread pools on the same cores are several times
/// slower than one). Process-wide; call before training, not during a GEMM.
void set_blas_threads(int threads);
int blas_threads();

} // namespace dtrain
