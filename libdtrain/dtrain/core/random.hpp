#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define DTRAIN_HOST_DEVICE __host__ __device__
#else
#define DTRAIN_HOST_DEVICE
#endif

namespace dtrain {

/// A stateless 64-bit mix of (seed, counter): the same bits on the host and
/// on a CUDA device, so a dropout mask or an initialization drawn from it is
/// reproducible on either and independent of thread scheduling.
DTRAIN_HOST_DEVICE inline uint64_t hash64(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (counter + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 24 bits of precision, from hash64.
DTRAIN_HOST_DEVICE inline float uniform01(uint64_t seed, uint64_t counter) {
  return static_cast<float>(hash64(seed, counter) >> 40) * (1.0f / 16777216.0f);
}

/// A small sequential generator (splitmix64) for host-side draws: shuffling,
/// initialization, synthetic data. Its sequence is fixed by the seed on every
/// platform, unlike std::shuffle or std::uniform_real_distribution, whose
/// results the C++ standard leaves to the library. Not thread-safe.
class rng {
public:
  explicit rng(uint64_t seed) : seed_(seed) {}

  uint64_t next() { return hash64(seed_, counter_++); }

  /// Uniform in [0, 1).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

  /// Uniform in [0, 1) with 53 bits of precision (every double step of the
  /// interval), for draws a float's 24 bits would make coarse: search spaces.
  double uniform_double() {
    return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  }

  /// Standard normal (Box-Muller; one draw per call, the pair's twin dropped).
  float normal() {
    double u1 = (static_cast<double>(next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(6.283185307179586 * u2));
  }

  /// Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the bias is
  /// below 2^-32 for any n this project uses).
  uint64_t below(uint64_t n) {
    __extension__ typedef unsigned __int128 wide;  // GCC/Clang/NVCC builtin
    return static_cast<uint64_t>((static_cast<wide>(next()) * n) >> 64);
  }

  /// Fisher-Yates shuffle of [first, first + n).
  template <class T>
  void shuffle(T* first, int64_t n) {
    for (int64_t i = n - 1; i > 0; --i) {
      auto j = static_cast<int64_t>(below(static_cast<uint64_t>(i) + 1));
      T tmp = first[i];
      first[i] = first[j];
      first[j] = tmp;
    }
  }

private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

} // namespace dtrain
