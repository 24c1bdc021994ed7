// The variant searcher (Ray's BasicVariantGenerator): the grid repeated
// num_samples times in Ray's order, fresh random values for every trial,
// finished after total(), and the same trials for the same seed.
#include <boost/test/unit_test.hpp>

#include <set>
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

} // namespace

BOOST_AUTO_TEST_SUITE(searchers)

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
