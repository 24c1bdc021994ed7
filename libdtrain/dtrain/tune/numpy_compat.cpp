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

// NumPy's aheapsort, over tosort[0, n).
void heapsort(const std::vector<double>& v, size_t* tosort, std::ptrdiff_t n) {
  size_t* a = tosort - 1;  // 1-based, as the algorithm is written
  std::ptrdiff_t i, j, l;
  size_t tmp;
  for (l = n >> 1; l > 0; --l) {
    tmp = a[l];
    for (i = l, j = l << 1; j <= n;) {
      if (j < n && less(v[a[j]], v[a[j + 1]]))
        j += 1;
      if (less(v[tmp], v[a[j]])) {
        a[i] = a[j];
        i = j;
        j += j;
      } else {
        break;
      }
    }
    a[i] = tmp;
  }
  for (; n > 1;) {
    tmp = a[n];
    a[n] = a[1];
    n -= 1;
    for (i = 1, j = 2; j <= n;) {
      if (j < n && less(v[a[j]], v[a[j + 1]]))
        j++;
      if (less(v[tmp], v[a[j]])) {
        a[i] = a[j];
        i = j;
        j += j;
      } else {
        break;
      }
    }
    a[i] = tmp;
  }
}

} // namespace

std::vector<size_t> numpy_argsort(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (order.size() < 2)
    return order;
  constexpr std::ptrdiff_t small = 15;
  size_t* pl = order.data();
  size_t* pr = pl + order.size() - 1;
  std::vector<size_t*> stack;
  std::vector<int> depths;
  int msb = 0;
  for (size_t n = order.size(); n > 1; n >>= 1)
    ++msb;
  int depth = msb * 2;
  for (;;) {
    if (depth < 0) {
      heapsort(v, pl, pr - pl + 1);
    } else {
      while (pr - pl > small) {
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
        // the larger part waits on the stack
        if (pi - pl < pr - pi) {
          stack.push_back(pi + 1);
          stack.push_back(pr);
          pr = pi - 1;
        } else {
          stack.push_back(pl);
          stack.push_back(pi - 1);
          pl = pi + 1;
        }
        depths.push_back(--depth);
      }
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
    if (stack.empty())
      break;
    pr = stack.back();
    stack.pop_back();
    pl = stack.back();
    stack.pop_back();
    depth = depths.back();
    depths.pop_back();
  }
  return order;
}

} // namespace dtrain::tune::detail
