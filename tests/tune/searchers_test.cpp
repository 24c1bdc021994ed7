// The variant searcher (Ray's BasicVariantGenerator): the grid repeated
// num_samples times in Ray's order, fresh random values for every trial,
// finished after total(), and the same trials for the same seed.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "dtrain/tune/search.hpp"

namespace {

using namespace dtrain::tune;

// Every configuration the searcher suggests, up to `limit`.
std::vector<config> drain(searcher& s, int limit = 1000) {
  std::vector<config> out;
  for (int i = 0; i < limit; ++i) {
    suggestion next = s.suggest("trial" + std::to_string(i));
    if (next.what == suggestion::kind::finished)
      break;
    BOOST_TEST_REQUIRE((next.what == suggestion::kind::trial));
    BOOST_TEST(next.restore_from.empty());
    out.push_back(next.configuration);
  }
  return out;
}

space grid_and_random() {
  space s;
  s.add("opt", grid_search({std::string("adam"), std::string("sgd")}))
      .add("layers", grid_search({int64_t{1}, int64_t{2}, int64_t{3}}))
      .add("lr", loguniform(1e-4, 1e-1))
      .add("epochs", constant(int64_t{5}));
  return s;
}

// A space of `dims` grid dimensions of `per_dim` integer points each.
space wide_grid(int dims, int64_t per_dim) {
  space s;
  for (int d = 0; d < dims; ++d) {
    std::vector<value> values;
    for (int64_t v = 0; v < per_dim; ++v)
      values.push_back(v);
    s.add("g" + std::to_string(d), grid_search(std::move(values)));
  }
  return s;
}

// This process's address space in bytes (VmSize), 0 if unknown.
rlim_t address_space_now() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0)
      return static_cast<rlim_t>(std::stoull(line.substr(7))) * 1024;  // "  123456 kB"
  return 0;
}

// Runs `body` in a child process allowed 1 GiB of address space more than
// it starts with, for 30 seconds: its exit code (0 for true), or 128 + the
// signal that ended it (std::bad_alloc's abort, the time limit's kill). A
// grid that is materialized dies there, not in the test program.
int in_bounded_child(bool (*body)()) {
  std::fflush(nullptr);
  const rlim_t bound = address_space_now() + (rlim_t{1} << 30);
  const pid_t pid = fork();
  if (pid == 0) {
    rlimit limit{bound, bound};
    setrlimit(RLIMIT_AS, &limit);
    alarm(30);
    _exit(body() ? 0 : 1);
  }
  int wstatus = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (waitpid(pid, &wstatus, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

} // namespace

BOOST_AUTO_TEST_SUITE(searchers)

BOOST_AUTO_TEST_CASE(a_grid_of_a_trillion_points_is_enumerated_lazily_within_a_gibibyte) {
  // 4 dimensions of 1,000 points: 10^12 points, 10^13 trials with
  // num_samples 10. Trial i is point i mod 10^12 in mixed radix, g0 fastest.
  const int code = in_bounded_child([] {
    const space s = wide_grid(4, 1000);
    if (!s.validate().is_ok() || s.grid_size() != 1000000000000LL)
      return false;
    auto search = make_variant_searcher(s, 10, 0);
    if (search->total() != 10000000000000LL)
      return false;
    for (int64_t i = 0; i < 2500; ++i) {
      suggestion next = search->suggest("t" + std::to_string(i));
      if (next.what != suggestion::kind::trial ||
          next.configuration.at("g0") != value{i % 1000} ||
          next.configuration.at("g1") != value{i / 1000} ||
          next.configuration.at("g2") != value{int64_t{0}})
        return false;
    }
    const grid_enumerator grid(s);
    return grid.point(999999999999LL) == config{{"g0", int64_t{999}}, {"g1", int64_t{999}},
                                                 {"g2", int64_t{999}}, {"g3", int64_t{999}}};
  });
  BOOST_TEST(code == 0, "the child exited with " << code << " (128 + 6: std::bad_alloc)");
}

BOOST_AUTO_TEST_CASE(grids_too_large_to_hold_or_count_are_errors_naming_the_dimension) {
  // One dimension of two billion points would be held in memory.
  space huge;
  huge.add("lr", grid(uniform(0, 1), 2000000000));
  const dtrain::status one = huge.validate();
  BOOST_TEST(one.message() == "lr: a grid of 2000000000 points is more than the 1000000 one "
                              "grid dimension may have", one.to_string());
  // 7 dimensions of 1,000 points: 10^21 points, more than an int64_t counts.
  const dtrain::status product = wide_grid(7, 1000).validate();
  BOOST_TEST((product.code() == dtrain::error_code::invalid_argument));
  BOOST_TEST(product.message().rfind("g6: its 1000 grid points times the 1000000000000000000 ",
                                     0) == 0, product.to_string());
  // A grid that fits, repeated more often than an int64_t counts.
  auto trials = variant_trial_count(wide_grid(2, 1000), INT64_MAX / 1000);
  BOOST_TEST_REQUIRE(!trials);
  BOOST_TEST(trials.error().message().rfind("num_samples: 9223372036854775 repetitions of a "
                                            "grid of 1000000 points", 0) == 0,
             trials.error().to_string());
  BOOST_TEST(variant_trial_count(wide_grid(2, 1000), 3).value() == 3000000);
}

BOOST_AUTO_TEST_CASE(the_grid_is_repeated_num_samples_times_in_rays_order) {
  auto s = make_variant_searcher(grid_and_random(), 2, 0);
  BOOST_TEST(s->total() == 12);
  auto trials = drain(*s);
  BOOST_TEST_REQUIRE(trials.size() == 12u);
  // "layers" sorts before "opt", so it turns fastest.
  for (size_t i = 0; i < trials.size(); ++i) {
    BOOST_TEST((trials[i].at("layers") == value{int64_t(i % 3 + 1)}));
    BOOST_TEST(to_string(trials[i].at("opt")) == ((i % 6) < 3 ? "adam" : "sgd"));
    BOOST_TEST(trials[i].size() == 4u);  // complete: grid, random and constant
    BOOST_TEST((trials[i].at("epochs") == value{int64_t{5}}));
  }
}

BOOST_AUTO_TEST_CASE(random_dimensions_are_drawn_fresh_for_every_trial) {
  auto trials = drain(*make_variant_searcher(grid_and_random(), 3, 0));
  std::set<double> lrs;
  for (const auto& t : trials)
    lrs.insert(std::get<double>(t.at("lr")));
  BOOST_TEST(lrs.size() == trials.size());  // repeats of a grid point differ too
}

BOOST_AUTO_TEST_CASE(a_space_without_a_grid_gives_num_samples_random_trials) {
  space s;
  s.add("lr", uniform(0, 1));
  auto trials = drain(*make_variant_searcher(s, 5, 3));
  BOOST_TEST(trials.size() == 5u);
}

BOOST_AUTO_TEST_CASE(the_searcher_stays_finished_after_its_total) {
  auto s = make_variant_searcher(grid_and_random(), 1, 0);
  BOOST_TEST(drain(*s).size() == 6u);
  BOOST_TEST((s->suggest("late").what == suggestion::kind::finished));
  BOOST_TEST((s->suggest("later").what == suggestion::kind::finished));
}

BOOST_AUTO_TEST_CASE(the_same_seed_suggests_the_same_trials_and_another_seed_differs) {
  auto a = drain(*make_variant_searcher(grid_and_random(), 2, 11));
  auto b = drain(*make_variant_searcher(grid_and_random(), 2, 11));
  auto c = drain(*make_variant_searcher(grid_and_random(), 2, 12));
  BOOST_TEST((a == b));
  BOOST_TEST((a != c));
}

BOOST_AUTO_TEST_SUITE_END()
