// cuBLAS is loaded on the first GEMM on a GPU, not linked
// (cuda/cublas_api.hpp): without a device it is never mapped, and it loads
// on request with every entry point dtrain calls. A unit suite, not a GPU
// one: it needs the toolkit's library, not a device.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace cuda = dtrain::cuda;

BOOST_AUTO_TEST_SUITE(cublas_loading)
BOOST_AUTO_TEST_CASE(cublas_is_loaded_on_demand_not_at_start_up) {
  auto mapped = [] {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find("libcublas") != std::string::npos)
        return true;
    return false;
  };
  // No GEMM ran on a GPU before this without a device: nothing loaded it.
  if (cuda::device_count() == 0)
    BOOST_TEST(!mapped());
  dtrain::status loaded = cuda::load_blas();
  if (cuda::unavailable_reason() == "dtrain was built without CUDA") {
    BOOST_TEST(loaded.code() == dtrain::error_code::unavailable);
    BOOST_TEST(!mapped());
    return;
  }
  BOOST_TEST(loaded.is_ok(), loaded.to_string());
  BOOST_TEST(mapped());
}

BOOST_AUTO_TEST_SUITE_END()
