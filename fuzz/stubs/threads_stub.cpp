// The fuzz build has no OpenBLAS: the readers' parallel parts
// (core/parallel.cpp) ask for the BLAS thread share, which here is one
// thread, so a table is always read in one part.
#include "dtrain/core/threads.hpp"

namespace dtrain {

int blas_threads() { return 1; }

} // namespace dtrain
