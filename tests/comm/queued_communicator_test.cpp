// The machinery every CPU backend shares (queued_communicator, work): no
// wait on a work handle lasts for ever, and abort() never blocks its caller,
// even when the backend's interrupt blocks (a slow teardown, as
// ncclCommAbort can be). A hand-written backend whose operations hang until
// released stands in for a peer that never arrives.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/collective_check.hpp"
#include "dtrain/comm/communicator.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

milliseconds since(clock_type::time_point start) {
  return std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
}

/// A backend whose run() hangs, ignoring its deadline, until released or
/// interrupted; its interrupt() takes `interrupt_delay` before it releases
/// the run (a blocking teardown).
class stuck_communicator final : public comm::queued_communicator {
public:
  stuck_communicator(milliseconds timeout, milliseconds interrupt_delay)
    : queued_communicator(0, 2, timeout), interrupt_delay_(interrupt_delay) {}
  ~stuck_communicator() override {
    release();
    shutdown();
  }

  std::string backend() const override { return "stuck"; }
  bool supports(device where) const override { return where.is_cpu(); }

  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    cv_.notify_all();
  }
  bool interrupted() const { return interrupted_.load(); }

protected:
  status run(const request& r) override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return released_; });
    return interrupted_ ? status(error_code::aborted, describe(r) + ": interrupted")
                        : status::ok();
  }
  void interrupt() override {
    std::this_thread::sleep_for(interrupt_delay_);
    interrupted_.store(true);
    release();
  }

private:
  milliseconds interrupt_delay_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<bool> interrupted_{false};
};

} // namespace

BOOST_AUTO_TEST_SUITE(queued_communicator)

BOOST_AUTO_TEST_CASE(wait_with_a_timeout_returns_timeout_while_the_operation_is_stuck) {
  stuck_communicator c(milliseconds(60000), milliseconds(0));
  auto w = c.barrier();
  auto start = clock_type::now();
  status s = w->wait(milliseconds(200));
  auto took = since(start);
  BOOST_TEST((s.code() == error_code::timeout), s.to_string());
  BOOST_TEST(s.message().find("barrier #0 on rank 0 of 2 (stuck)") != std::string::npos,
             s.message());
  BOOST_TEST(took.count() >= 200);
  BOOST_TEST(took.count() < 2000);
  BOOST_TEST(!w->completed());
  c.release();
  BOOST_TEST(w->wait().is_ok());  // it still ends, and then says how
}

BOOST_AUTO_TEST_CASE(wait_without_a_timeout_ends_at_the_operations_deadline_plus_grace) {
  // The backend breaks its promise to end at the deadline: wait() does not
  // follow it past deadline + grace.
  const milliseconds timeout(300);
  stuck_communicator c(timeout, milliseconds(0));
  auto start = clock_type::now();
  auto w = c.all_reduce(tensor::zeros({4}), comm::reduce_op::sum);
  status s = w->wait();
  auto took = since(start);
  BOOST_TEST((s.code() == error_code::timeout), s.to_string());
  BOOST_TEST((took >= timeout + comm::work::wait_grace - milliseconds(5)), took.count() << " ms");
  BOOST_TEST((took < timeout + comm::work::wait_grace + milliseconds(2000)), took.count() << " ms");
  // A longer explicit timeout is capped at the same deadline.
  start = clock_type::now();
  BOOST_TEST((w->wait(milliseconds(60000)).code() == error_code::timeout));
  BOOST_TEST(since(start).count() < 1000);
}

BOOST_AUTO_TEST_CASE(abort_returns_at_once_although_the_backends_interrupt_blocks) {
  // interrupt() takes 1.5 s, as a slow teardown may: abort() must not.
  stuck_communicator c(milliseconds(60000), milliseconds(1500));
  auto running = c.barrier();
  auto queued = c.barrier();
  std::this_thread::sleep_for(milliseconds(50));  // the first is in run()
  auto start = clock_type::now();
  c.abort("test abort");
  auto took = since(start);
  BOOST_TEST(took.count() < 100, "abort() blocked its caller for " << took.count() << " ms");
  BOOST_TEST(c.broken());
  // Queued operations fail at once; the running one once interrupted.
  status q = queued->wait(milliseconds(100));
  BOOST_TEST((q.code() == error_code::aborted), q.to_string());
  status r = running->wait(milliseconds(5000));
  BOOST_TEST((r.code() == error_code::aborted), r.to_string());
  BOOST_TEST(c.interrupted());
  c.abort("again");  // a second abort is a no-op
  BOOST_TEST(c.broken_reason().message().find("test abort") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(abort_returns_within_a_few_ms_while_a_real_collective_waits_for_a_peer) {
  // Rank 1 of each backend's group never joins the all_reduce.
  for (const std::string backend : {"shm", "gloo", "hierarchical"}) {
    BOOST_TEST_CONTEXT(backend) {
      group_stores stores(rank_mode::threads);
      std::atomic<bool> done{false};
      auto outcomes = run_ranks(2, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
        comm::group_options o;
        o.rank = rank;
        o.size = 2;
        o.store = stores.for_rank();
        o.backend = backend;
        o.host = "host" + std::to_string(rank);
        o.timeout = milliseconds(20000);
        DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(o));
        if (rank == 1) {
          while (!done.load())
            std::this_thread::sleep_for(milliseconds(10));
          return status::ok();
        }
        auto w = c->all_reduce(tensor::zeros({1000}), comm::reduce_op::sum);
        std::this_thread::sleep_for(milliseconds(200));
        auto start = clock_type::now();
        c->abort("test abort");
        auto took = since(start);
        status s = w->wait(milliseconds(5000));
        done.store(true);
        DTRAIN_RETURN_IF_ERROR(expect(took < milliseconds(100), "abort() took " +
                                                                   std::to_string(took.count()) +
                                                                   " ms"));
        return expect(s.code() == error_code::aborted, "the all_reduce gave " + s.to_string());
      });
      BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
