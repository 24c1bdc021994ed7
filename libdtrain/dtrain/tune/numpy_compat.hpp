#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

/// What Optuna 3.1's samplers take from NumPy, as NumPy 1.24 does it: the
/// random draws of its legacy RandomState (MT19937), and the order of its
/// default (quicksort) argsort among equal values. The TPE and NSGA-II
/// searchers draw from this stream so that, for the same seed, they make
/// Optuna's choices: a seed's trials can be compared one by one with
/// Optuna's, not only their medians over many seeds. Internal to
/// dtrain::tune. Written from NumPy's documented algorithms (MT19937's
/// init_genrand seeding, 53-bit doubles from two 32-bit words, masked
/// rejection for bounded integers, choice by the cumulative sum); the code
/// is our own. numpy_random is a plain value; not thread-safe.
namespace dtrain::tune::detail {

class numpy_random {
public:
  /// RandomState(seed). NumPy takes seeds below 2^32 only; a larger seed is
  /// seeded from both its halves (init_by_array), which NumPy would refuse.
  explicit numpy_random(uint64_t seed);

  /// One 32-bit word of MT19937.
  uint32_t next32();
  /// random_sample() / rand(): uniform in [0, 1) with 53 bits.
  double random_sample();
  /// uniform(low, high): low + (high - low) * random_sample().
  double uniform(double low, double high) { return low + (high - low) * random_sample(); }
  /// randint(0, n) and choice(n) without p: uniform in [0, n), n > 0, by
  /// masked rejection of 32-bit words (n <= 2^32).
  uint64_t randint(uint64_t n);
  /// choice(len(p), size, p=p): `size` indices, each the first whose
  /// normalized cumulative sum exceeds a random_sample().
  std::vector<size_t> choice(const std::vector<double>& p, size_t size);

private:
  static constexpr int words_ = 624;
  void twist();
  uint32_t state_[words_];
  int next_ = words_;
};

/// np.argsort(v) with its default kind: NumPy's introsort (median-of-three
/// quicksort while a part holds more than 16 elements, then insertion
/// sort; a heapsort past its depth limit). Not stable: among equal values
/// the order is this algorithm's, which decides, for instance, which of
/// several equal observations the TPE prior's bandwidth replaces. NaN
/// sorts last.
std::vector<size_t> numpy_argsort(const std::vector<double>& v);

} // namespace dtrain::tune::detail
