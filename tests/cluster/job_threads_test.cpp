// job_thread: jobs run one at a time in the order posted; stop() runs the
// queued ones within its bound, drops the rest (calling their `dropped`),
// and never waits past the bound for a job that hangs.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dtrain/cluster/job_thread.hpp"

using dtrain::actors::job_thread;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

BOOST_AUTO_TEST_SUITE(job_threads)

BOOST_AUTO_TEST_CASE(jobs_run_one_at_a_time_in_the_order_posted) {
  auto order = std::make_shared<std::vector<int>>();
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  job_thread worker("test-fifo");
  const auto caller = std::this_thread::get_id();
  auto elsewhere = std::make_shared<std::atomic<bool>>(true);
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(worker.post([=] {
      int now = ++*running;
      *most = std::max(most->load(), now);
      if (std::this_thread::get_id() == caller)
        *elsewhere = false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      order->push_back(i);  // one job at a time: no lock needed
      --*running;
    }));
  BOOST_TEST(worker.stop(milliseconds(10000)));
  BOOST_REQUIRE(order->size() == 50u);
  for (int i = 0; i < 50; ++i)
    BOOST_TEST((*order)[i] == i);
  BOOST_TEST(most->load() == 1);
  BOOST_TEST(elsewhere->load());
  BOOST_TEST(!worker.post([] {}), "no job is taken after stop()");
  BOOST_TEST(worker.stop(milliseconds(10)), "a second stop() returns at once");
}

BOOST_AUTO_TEST_CASE(stop_drops_what_did_not_start_by_its_bound_and_never_waits_longer) {
  auto ran = std::make_shared<std::atomic<int>>(0);
  auto dropped = std::make_shared<std::atomic<int>>(0);
  auto release = std::make_shared<std::atomic<bool>>(false);
  job_thread worker("test-bound");
  // The first job hangs (a disk that does not answer) until released.
  worker.post([release, ran] {
    while (!*release)
      std::this_thread::sleep_for(milliseconds(5));
    ++*ran;
  });
  for (int i = 0; i < 5; ++i)
    worker.post([ran] { ++*ran; }, [dropped] { ++*dropped; });
  // Once the first has started, the other five wait.
  const auto started_by = clock_type::now() + std::chrono::seconds(5);
  while (worker.queued() > 5u && clock_type::now() < started_by)
    std::this_thread::sleep_for(milliseconds(1));
  BOOST_TEST(worker.queued() == 5u);
  const auto start = clock_type::now();
  BOOST_TEST(!worker.stop(milliseconds(300)), "stop() says it gave up on jobs");
  const auto took = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
  BOOST_TEST(took.count() >= 250);
  BOOST_TEST(took.count() < 2000, "stop() took " << took.count() << " ms for a bound of 300");
  BOOST_TEST(dropped->load() == 5);
  BOOST_TEST(ran->load() == 0);
  // The job left running ends on its own, and nothing else runs after it.
  *release = true;
  const auto deadline = clock_type::now() + std::chrono::seconds(5);
  while (ran->load() == 0 && clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  std::this_thread::sleep_for(milliseconds(50));
  BOOST_TEST(ran->load() == 1);
}

BOOST_AUTO_TEST_CASE(stop_runs_the_queued_jobs_that_fit_in_its_bound) {
  auto ran = std::make_shared<std::atomic<int>>(0);
  auto dropped = std::make_shared<std::atomic<int>>(0);
  job_thread worker("test-drain");
  for (int i = 0; i < 10; ++i)
    worker.post(
        [ran] {
          std::this_thread::sleep_for(milliseconds(100));
          ++*ran;
        },
        [dropped] { ++*dropped; });
  // About 4 of the 10 fit in 450 ms; the one running at the bound ends
  // after stop() returned.
  BOOST_TEST(!worker.stop(milliseconds(450)));
  BOOST_TEST(ran->load() >= 2);
  BOOST_TEST(ran->load() <= 5);
  std::this_thread::sleep_for(milliseconds(300));
  BOOST_TEST(ran->load() + dropped->load() == 10, "every job ran or was dropped, once");
}

BOOST_AUTO_TEST_SUITE_END()
