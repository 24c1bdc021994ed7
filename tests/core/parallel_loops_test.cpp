// parallel_for: every index exactly once, the grain respected, loops from
// two threads at once, and the thread budget followed.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "dtrain/core/parallel.hpp"
#include "dtrain/core/threads.hpp"

using dtrain::parallel_for;

namespace {

// Restores OpenBLAS's thread count, which parallel_for follows.
struct blas_threads_guard {
  int saved = dtrain::blas_threads();
  explicit blas_threads_guard(int threads) { dtrain::set_blas_threads(threads); }
  ~blas_threads_guard() { dtrain::set_blas_threads(saved); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(parallel_loops)

BOOST_AUTO_TEST_CASE(every_index_is_visited_once_in_ranges_of_at_least_the_grain) {
  blas_threads_guard threads(4);
  for (int64_t n : {1, 2, 7, 100, 4097, 100000})
    for (int64_t grain : {1, 3, 1000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      parallel_for(n, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          seen[static_cast<size_t>(i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(m);
        ranges.emplace_back(begin, end);
      });
      int wrong = 0;
      for (auto& s : seen)
        wrong += s.load() != 1;
      BOOST_TEST(wrong == 0, "n " << n << " grain " << grain);
      BOOST_TEST(ranges.size() <= 4u);
      if (ranges.size() > 1)
        for (auto [begin, end] : ranges)
          BOOST_TEST(end - begin >= grain, "n " << n << " grain " << grain);
    }
}

BOOST_AUTO_TEST_CASE(the_work_spreads_over_the_budget_and_one_thread_runs_inline) {
  {
    blas_threads_guard threads(2);
    std::mutex m;
    std::set<std::thread::id> ids;
    // Ranges that wait for each other prove two threads ran them at once.
    std::atomic<int> arrived{0};
    parallel_for(2, 1, [&](int64_t, int64_t) {
      arrived.fetch_add(1);
      for (int spin = 0; arrived.load() < 2 && spin < 50000000; ++spin)
        std::this_thread::yield();
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
    BOOST_TEST(arrived.load() == 2);
    BOOST_TEST(ids.size() == 2u);
  }
  {
    blas_threads_guard threads(1);
    std::set<std::thread::id> ids;
    parallel_for(1000, 1, [&](int64_t, int64_t) { ids.insert(std::this_thread::get_id()); });
    BOOST_TEST(ids.size() == 1u);
    BOOST_TEST((*ids.begin() == std::this_thread::get_id()));
  }
}

BOOST_AUTO_TEST_CASE(loops_from_several_threads_at_once_all_complete) {
  blas_threads_guard threads(3);
  constexpr int callers = 4, rounds = 200;
  std::vector<int64_t> totals(callers, 0);
  std::vector<std::thread> threads_running;
  for (int c = 0; c < callers; ++c)
    threads_running.emplace_back([&, c] {
      for (int r = 0; r < rounds; ++r) {
        std::atomic<int64_t> sum{0};
        parallel_for(1000, 10, [&](int64_t begin, int64_t end) {
          int64_t local = 0;
          for (int64_t i = begin; i < end; ++i)
            local += i;
          sum.fetch_add(local);
        });
        totals[static_cast<size_t>(c)] += sum.load();
      }
    });
  for (auto& t : threads_running)
    t.join();
  for (int c = 0; c < callers; ++c)
    BOOST_TEST(totals[static_cast<size_t>(c)] == int64_t{rounds} * 999 * 1000 / 2);
}

BOOST_AUTO_TEST_CASE(a_loop_inside_a_loop_runs_inline_and_completes) {
  blas_threads_guard threads(2);
  std::atomic<int64_t> total{0};
  std::atomic<int> elsewhere{0};  // inner ranges run off their outer range's thread
  parallel_for(4, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto outer = std::this_thread::get_id();
      parallel_for(1000, 1, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != outer)
          elsewhere.fetch_add(1);
        total.fetch_add(e - b);
      });
    }
  });
  BOOST_TEST(total.load() == 4000);
  BOOST_TEST(elsewhere.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
