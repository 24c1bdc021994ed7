#include "dtrain/core/threads.hpp"

#include <cblas.h>

namespace dtrain {

void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

int blas_threads() { return openblas_get_num_threads(); }

} // namespace dtrain
