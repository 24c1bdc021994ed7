// NumPy's legacy RandomState draws (numpy_compat.hpp).
#include "dtrain/tune/numpy_compat.hpp"

#include <algorithm>

namespace dtrain::tune::detail {

// MT19937 seeded as NumPy seeds it: init_genrand for a 32-bit seed,
// init_by_array for a longer key.
numpy_random::numpy_random(uint64_t seed) {
  auto init_genrand = [this](uint32_t s) {
    state_[0] = s;
    for (int i = 1; i < words_; ++i)
      state_[i] =
          1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  };
  if (seed <= 0xffffffffULL) {
    init_genrand(static_cast<uint32_t>(seed));
    return;
  }
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  init_genrand(19650218U);
  int i = 1, j = 0;
  for (int k = words_; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525U)) + key[j] +
                static_cast<uint32_t>(j);
    if (++i >= words_) {
      state_[0] = state_[words_ - 1];
      i = 1;
    }
    j = (j + 1) % 2;
  }
  for (int k = words_ - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941U)) -
                static_cast<uint32_t>(i);
    if (++i >= words_) {
      state_[0] = state_[words_ - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000U;
}

void numpy_random::twist() {
  constexpr int m = 397;
  constexpr uint32_t matrix = 0x9908b0dfU, upper = 0x80000000U, lower = 0x7fffffffU;
  for (int i = 0; i < words_; ++i) {
    const uint32_t y = (state_[i] & upper) | (state_[(i + 1) % words_] & lower);
    state_[i] = state_[(i + m) % words_] ^ (y >> 1) ^ ((y & 1U) ? matrix : 0U);
  }
  next_ = 0;
}

uint32_t numpy_random::next32() {
  if (next_ >= words_)
    twist();
  uint32_t y = state_[next_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  return y ^ (y >> 18);
}

double numpy_random::random_sample() {
  const uint32_t a = next32() >> 5, b = next32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

uint64_t numpy_random::randint(uint64_t n) {
  const uint64_t range = n - 1;
  if (range == 0)
    return 0;
  uint64_t mask = range;
  for (int shift = 1; shift < 64; shift <<= 1)
    mask |= mask >> shift;
  uint64_t v;
  do
    v = next32() & mask;
  while (v > range);
  return v;
}

std::vector<size_t> numpy_random::choice(const std::vector<double>& p, size_t size) {
  std::vector<double> cdf(p.size());
  double running = 0;
  for (size_t i = 0; i < p.size(); ++i)
    cdf[i] = running += p[i];
  const double last = cdf.back();
  for (double& c : cdf)
    c /= last;
  std::vector<size_t> out(size);
  for (size_t k = 0; k < size; ++k) {
    // searchsorted(side='right'): the first cdf entry above u.
    const double u = random_sample();
    const auto at = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
    out[k] = std::min(static_cast<size_t>(at), cdf.size() - 1);
  }
  return out;
}

namespace {

// NumPy's order for doubles: NaN after every number.
bool less(double a, double b) { return a < b || (b != b && a == a); }

// Puts `item` at heap position i of a[1..n] (1-based) and sifts it down.
void sift_down(const std::vector<double>& v, size_t* a, std::ptrdiff_t i, std::ptrdiff_t n,
               size_t item) {
  for (std::ptrdiff_t j = i << 1; j <= n;) {
    if (j < n && less(v[a[j]], v[a[j + 1]]))
      j += 1;
    if (!less(v[item], v[a[j]]))
      break;
    a[i] = a[j];
    i = j;
    j += j;
  }
  a[i] = item;
}

// NumPy's aheapsort, over tosort[0, n): a max-heap built from the middle
// down, then the top swapped to the end n - 1 times.
void heapsort(const std::vector<double>& v, size_t* tosort, std::ptrdiff_t n) {
  size_t* a = tosort - 1;  // 1-based, as the algorithm is written
  for (std::ptrdiff_t l = n >> 1; l > 0; --l)
    sift_down(v, a, l, n, a[l]);
  while (n > 1) {
    const size_t top = a[n];
    a[n] = a[1];
    n -= 1;
    sift_down(v, a, 1, n, top);
  }
}

// One median-of-three partition of [pl, pr] (more than 16 elements):
// returns where the pivot ends.
size_t* partition(const std::vector<double>& v, size_t* pl, size_t* pr) {
  size_t* pm = pl + ((pr - pl) >> 1);
  if (less(v[*pm], v[*pl]))
    std::swap(*pm, *pl);
  if (less(v[*pr], v[*pm]))
    std::swap(*pr, *pm);
  if (less(v[*pm], v[*pl]))
    std::swap(*pm, *pl);
  const double pivot = v[*pm];
  size_t* pi = pl;
  size_t* pj = pr - 1;
  std::swap(*pm, *pj);
  for (;;) {
    do
      ++pi;
    while (less(v[*pi], pivot));
    do
      --pj;
    while (less(pivot, v[*pj]));
    if (pi >= pj)
      break;
    std::swap(*pi, *pj);
  }
  std::swap(*pi, *(pr - 1));
  return pi;
}

void insertion_sort(const std::vector<double>& v, size_t* pl, size_t* pr) {
  for (size_t* pi = pl + 1; pi <= pr; ++pi) {
    const size_t vi = *pi;
    const double x = v[vi];
    size_t* pj = pi;
    size_t* pk = pi - 1;
    while (pj > pl && less(x, v[*pk]))
      *pj-- = *pk--;
    *pj = vi;
  }
}

} // namespace

std::vector<size_t> numpy_argsort(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (order.size() < 2)
    return order;
  // Parts of more than 16 elements are partitioned, the larger half kept on
  // a stack; each part's depth budget starts at twice log2(n).
  struct part {
    size_t *first, *last;
    int depth;
  };
  std::vector<part> stack;
  int depth = 0;
  for (size_t n = order.size(); n > 1; n >>= 1)
    depth += 2;
  size_t* pl = order.data();
  size_t* pr = pl + order.size() - 1;
  for (;;) {
    if (depth < 0) {
      heapsort(v, pl, pr - pl + 1);
    } else {
      while (pr - pl > 15) {
        size_t* pi = partition(v, pl, pr);
        --depth;
        if (pi - pl < pr - pi) {
          stack.push_back({pi + 1, pr, depth});
          pr = pi - 1;
        } else {
          stack.push_back({pl, pi - 1, depth});
          pl = pi + 1;
        }
      }
      insertion_sort(v, pl, pr);
    }
    if (stack.empty())
      break;
    pl = stack.back().first;
    pr = stack.back().last;
    depth = stack.back().depth;
    stack.pop_back();
  }
  return order;
}

} // namespace dtrain::tune::detail
