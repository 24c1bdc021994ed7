// The sweep journal and its replay: a sweep cut short after any number of
// events and resumed from the store ends with the same trials, the same
// configurations and the same stop decisions as one that ran through.
// The tuner's live loop is played here by a sequential driver (one trial at
// a time, so the order of events is fixed), with deterministic curves.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <set>

#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/journal.hpp"
#include "dtrain/tune/sweep.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::tune;

namespace {

// What a sweep ended with, trial by trial.
struct outcome {
  std::vector<std::string> ids;
  std::map<std::string, std::string> configs;  // to_json
  std::map<std::string, std::string> states;
  std::map<std::string, int64_t> epochs;
};

// A curve that rises with the epoch toward a ceiling set by the
// configuration, so ASHA and the median rule have something to cut.
double curve(const config& c, int64_t epoch) {
  const double lr = std::get<double>(c.at("lr"));
  const double width = static_cast<double>(std::get<int64_t>(c.at("width")));
  const double ceiling = 0.9 - 0.05 * std::abs(std::log10(lr) + 2.5) + 0.0001 * width;
  return ceiling - 0.3 / static_cast<double>(epoch);
}

space sweep_space() {
  space s;
  s.add("lr", loguniform(1e-5, 1e-1));
  s.add("width", choice({int64_t{16}, int64_t{64}, int64_t{256}}));
  return s;
}

// "asha", "median", "hyperband", "tpe+asha" (TPE suggests from the
// results so far, so its replay must hear them in the same order) or
// "mvtpe-liar+asha" (multivariate TPE with the constant liar: it also
// depends on which trials were running at each suggestion, so those runs
// have three trials at a time), or "motpe+fifo" and "nsga2+fifo" (two
// objectives: validation_accuracy and the width's cost).
sweep_config settings(const std::string& kind) {
  const bool tpe = kind.find("tpe") != std::string::npos;
  const bool searched = tpe || kind.rfind("nsga2", 0) == 0;
  const std::string scheduler = searched ? kind.substr(kind.find('+') + 1) : kind;
  sweep_config c;
  c.tpe_multivariate = kind.rfind("mvtpe", 0) == 0;
  c.tpe_constant_liar = kind.find("-liar") != std::string::npos;
  c.metric = "validation_accuracy";
  c.direction = mode::max;
  c.searcher = tpe ? "tpe" : kind.rfind("nsga2", 0) == 0 ? "nsga2" : "random";
  // Two objectives (motpe, nsga2): the accuracy up, the width's cost down.
  if (kind.rfind("motpe", 0) == 0 || kind.rfind("nsga2", 0) == 0)
    c.objectives = {{"validation_accuracy", mode::max}, {"cost", mode::min}};
  c.nsga2_population_size = 4;
  c.tpe_startup_trials = 4;
  c.num_samples = 12;
  c.max_epochs = 8;
  c.scheduler = scheduler;
  c.asha.grace_period = 1;
  c.asha.reduction_factor = 2;
  c.median.min_completed = 2;
  c.hyperband.study_name = "resume-check";  // 2 brackets over 8 epochs
  c.seed = 1;  // one whose TPE + ASHA sweep stops trials (seed 7's stops none)
  return c;
}

// Runs the sweep of experiment `id`, one trial at a time or (the liar's)
// three, resuming it from the store when `resume`, and stops dead (as a
// killed driver would) after `kill_after` reports (-1: never). Every epoch
// has a checkpoint. The next report is always the running trial's with the
// fewest epochs (ties: the smaller id), and a trial starts whenever fewer
// run than allowed: an order that depends only on the stored state, so a
// resumed run goes on exactly as the whole one did.
outcome run(experiments::experiment_store& db, std::shared_ptr<experiments::experiment_store> shared, int64_t id,
            const std::string& scheduler, bool resume, int kill_after) {
  const space s = sweep_space();
  const sweep_config c = settings(scheduler);
  auto search = make_searcher(s, c);
  auto sched = std::move(make_scheduler(c, s).value());
  auto stoppers = make_stoppers(c);
  std::vector<trial_record> trials;
  std::deque<std::string> unfinished;
  int64_t next_trial = 0, next_seq = 1;
  if (resume) {
    auto r = replay(db, id, *search, *sched, stoppers, c, true);
    BOOST_TEST_REQUIRE(r.is_ok(), r.error().to_string());
    trials = r->trials;
    for (const auto& t : trials)
      if (r->unfinished.count(t.id) != 0)
        unfinished.push_back(t.id);
    next_trial = r->next_trial;
    next_seq = r->next_seq;
  }
  journal j(shared, id, c.metric, c.direction, next_seq);
  if (resume)
    j.adopt(db.trials(id).value());
  int reports = 0;
  auto find = [&](const std::string& tid) -> trial_record& {
    for (auto& t : trials)
      if (t.id == tid)
        return t;
    BOOST_FAIL("no trial " + tid);
    return trials.front();
  };
  const size_t at_once = c.tpe_constant_liar ? 3 : 1;
  std::vector<std::string> active;
  bool suggesting = true;
  while (true) {
    while (active.size() < at_once && (!unfinished.empty() || suggesting)) {
      if (!unfinished.empty()) {
        active.push_back(unfinished.front());
        unfinished.pop_front();
        continue;
      }
      char buf[16];
      std::snprintf(buf, sizeof buf, "%05lld", static_cast<long long>(next_trial));
      suggestion next = search->suggest(buf);
      if (next.what != suggestion::kind::trial) {
        suggesting = false;
        break;
      }
      ++next_trial;
      trial_record r;
      r.id = buf;
      r.configuration = next.configuration;
      trials.push_back(r);
      sched->on_add(r.id, r.configuration);
      j.created(trials.back());
      active.push_back(r.id);
    }
    if (active.empty())
      break;
    auto next = std::min_element(active.begin(), active.end(), [&](const auto& a, const auto& b) {
      return std::make_pair(find(a).epochs(), a) < std::make_pair(find(b).epochs(), b);
    });
    const std::string tid = *next;
    trial_record& r = find(tid);
    r.status = trial_status::running;
    const int64_t epoch = r.epochs() + 1;
    const double cost = static_cast<double>(std::get<int64_t>(r.configuration.at("width"))) / 256;
    report rep{tid, epoch,
               {{"validation_accuracy", curve(r.configuration, epoch)}, {"loss", 1.0 / epoch},
                {"cost", cost}}};
    r.history.push_back(rep);
    j.reported(r, rep);
    // A trainer's event (informational) as the last row before a kill:
    // the resumed journal must number after it.
    if (epoch == 2)
      j.event(r, epoch, "failure", "failure 1 of at most 3: a replica of " + tid + " died");
    if (kill_after >= 0 && ++reports > kill_after) {
      BOOST_TEST_REQUIRE(j.flush().is_ok());
      return {};  // the driver is gone: nothing else happens
    }
    verdict v = judge(*search, *sched, stoppers, c, rep, epoch, 0.0);
    if (v.ended) {
      r.status = v.status;
      j.ended(r, v.status == trial_status::stopped ? trial_end::stopped : trial_end::completed);
      active.erase(next);
    }
  }
  BOOST_TEST_REQUIRE(j.flush().is_ok());
  outcome out;
  for (const auto& t : trials) {
    out.ids.push_back(t.id);
    out.configs[t.id] = to_json(t.configuration);
    out.states[t.id] = state_name(t);
    out.epochs[t.id] = t.epochs();
  }
  return out;
}

int64_t new_experiment(experiments::experiment_store& db) {
  experiments::experiment_row e;
  e.name = "resume-check";
  e.kind = "tune";
  auto id = db.create_experiment(e);
  BOOST_TEST_REQUIRE(id.is_ok(), id.error().to_string());
  return *id;
}

// A scheduler that only remembers what it was told (a fifo otherwise).
class recording_scheduler final : public scheduler {
public:
  decision on_result(const std::string&, int64_t, double) override { return decision::go_on; }
  void on_end(const std::string&, trial_end) override {}
  void on_add(const std::string& trial, const config& c) override { added[trial] = to_json(c); }
  void on_exploited(const std::string& trial, const exploit_plan& plan) override {
    exploited[trial] = plan.source + " " + to_json(plan.configuration);
  }
  std::string describe() const override { return "recording"; }
  std::map<std::string, std::string> added, exploited;
};

} // namespace

BOOST_AUTO_TEST_SUITE(sweep_journal)

BOOST_AUTO_TEST_CASE(a_sweep_killed_anywhere_resumes_to_the_same_trials_and_decisions) {
  for (const std::string scheduler :
       {"asha", "median", "tpe+asha", "hyperband", "mvtpe-liar+asha", "motpe+fifo",
        "nsga2+fifo"}) {
    testing::temp_dir dir;
    auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
    BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
    std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
    const int64_t whole_id = new_experiment(*db);
    const outcome whole = run(*db, db, whole_id, scheduler, false, -1);
    const size_t whole_events = db->events(whole_id).value().size();
    BOOST_TEST(whole_events > 0u);
    BOOST_TEST_REQUIRE(whole.ids.size() == 12u);
    int stopped = 0;
    for (const auto& [id, state] : whole.states)
      stopped += state == "STOPPED";
    if (scheduler.find("fifo") == std::string::npos)
      BOOST_TEST(stopped > 0, scheduler << " stopped no trial: the check would prove nothing");
    for (int kill_after : {0, 1, 5, 13, 29, 40}) {
      const int64_t id = new_experiment(*db);
      (void)run(*db, db, id, scheduler, false, kill_after);
      const outcome resumed = run(*db, db, id, scheduler, true, -1);
      BOOST_TEST((resumed.ids == whole.ids), scheduler << " killed after " << kill_after);
      BOOST_TEST((resumed.configs == whole.configs), scheduler << " killed after " << kill_after);
      BOOST_TEST((resumed.states == whole.states), scheduler << " killed after " << kill_after);
      BOOST_TEST((resumed.epochs == whole.epochs), scheduler << " killed after " << kill_after);
      // Events survive the resume (none replaced) and share no seq with
      // another row.
      BOOST_TEST(db->events(id).value().size() == whole_events,
                 scheduler << " killed after " << kill_after);
      // (Rows kept in locals: a loop over a temporary result's value() dangles.)
      std::set<int64_t> seqs;
      const auto stored_metrics = db->metrics(id).value();
      for (const auto& m : stored_metrics)
        seqs.insert(m.seq);
      const auto stored_trials = db->trials(id).value();
      for (const auto& t : stored_trials)
        seqs.insert({t.seq_created, t.seq_ended});
      const auto stored_events = db->events(id).value();
      for (const auto& e : stored_events)
        BOOST_TEST(seqs.insert(e.seq).second, "event seq " << e.seq << " reused, " << scheduler
                                                           << " killed after " << kill_after);
      // Killed twice: still the same.
      const int64_t twice = new_experiment(*db);
      (void)run(*db, db, twice, scheduler, false, kill_after);
      (void)run(*db, db, twice, scheduler, true, kill_after + 7);
      const outcome again = run(*db, db, twice, scheduler, true, -1);
      BOOST_TEST((again.states == whole.states), scheduler << " killed twice after " << kill_after);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_resume_with_other_settings_is_refused_naming_the_trial) {
  testing::temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  const int64_t id = new_experiment(*db);
  (void)run(*db, db, id, "asha", false, 10);
  sweep_config c = settings("asha");
  c.seed = 8;  // another seed: other configurations
  const space s = sweep_space();
  auto search = make_searcher(s, c);
  auto sched = std::move(make_scheduler(c, s).value());
  auto stoppers = make_stoppers(c);
  auto r = replay(*db, id, *search, *sched, stoppers, c, true);
  BOOST_TEST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("trial 00000") != std::string::npos, r.error().message());
  // Forced: the stored configurations win.
  auto search2 = make_searcher(s, c);
  auto sched2 = std::move(make_scheduler(c, s).value());
  auto forced = replay(*db, id, *search2, *sched2, stoppers, c, false);
  BOOST_TEST_REQUIRE(forced.is_ok(), forced.error().to_string());
  auto stored = db->trials(id);
  BOOST_TEST_REQUIRE(stored.is_ok());
  BOOST_TEST(to_json(forced->trials.front().configuration) == stored->front().hyperparameters);
}

// --force: the stored configurations win, in the scheduler too (PBT
// explores from what a trial runs, not from what the searcher suggests now).
BOOST_AUTO_TEST_CASE(a_forced_replay_tells_the_scheduler_the_stored_configurations) {
  testing::temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  const int64_t id = new_experiment(*db);
  (void)run(*db, db, id, "asha", false, 10);
  sweep_config c = settings("asha");
  c.seed = 8;  // another seed: other suggestions
  const space s = sweep_space();
  auto search = make_searcher(s, c);
  recording_scheduler sched;
  auto stoppers = make_stoppers(c);
  auto forced = replay(*db, id, *search, sched, stoppers, c, false);
  BOOST_TEST_REQUIRE(forced.is_ok(), forced.error().to_string());
  auto stored = db->trials(id);
  BOOST_TEST_REQUIRE(stored.is_ok());
  BOOST_TEST_REQUIRE(!stored->empty());
  for (const auto& t : *stored)
    BOOST_TEST(sched.added[t.id] == t.hyperparameters, t.id);
}

// --force with settings whose scheduler no longer decides a stored exploit
// (another PBT interval, another scheduler): the stored exploit still
// stands (the trial runs the copied configuration), as a stored
// configuration does; without --force it is refused.
BOOST_AUTO_TEST_CASE(a_forced_replay_keeps_a_stored_exploit_its_scheduler_did_not_decide) {
  testing::temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  const int64_t id = new_experiment(*db);
  const space s = sweep_space();
  const sweep_config c = settings("asha");
  auto search = make_searcher(s, c);
  journal j(db, id, c.metric, c.direction);
  std::vector<trial_record> trials(2);
  for (int i = 0; i < 2; ++i) {
    trials[i].id = i == 0 ? "00000" : "00001";
    trials[i].configuration = search->suggest(trials[i].id).configuration;
    j.created(trials[i]);
    for (int64_t epoch = 1; epoch <= 2; ++epoch) {
      report rep{trials[i].id, epoch, {{"validation_accuracy", 0.5 + 0.1 * i}}};
      trials[i].history.push_back(rep);
      j.reported(trials[i], rep);
    }
  }
  const config before = trials[0].configuration;
  trials[0].configuration = trials[1].configuration;
  j.exploited(trials[0], "00001", 2, before, &trials[0].configuration);
  BOOST_TEST_REQUIRE(j.flush().is_ok());

  for (const bool check : {true, false}) {
    auto search2 = make_searcher(s, c);
    recording_scheduler sched;
    auto stoppers = make_stoppers(c);
    auto r = replay(*db, id, *search2, sched, stoppers, c, check);
    if (check) {
      BOOST_TEST(!r.is_ok());
      continue;
    }
    BOOST_TEST_REQUIRE(r.is_ok(), r.error().to_string());
    BOOST_TEST(to_json(r->trials.at(0).configuration) == to_json(trials[1].configuration));
    BOOST_TEST(sched.exploited["00000"] == "00001 " + to_json(trials[1].configuration));
    BOOST_TEST(r->unfinished.count("00000") == 1u);
  }
}

// A store another program wrote, edited by hand or damaged: each
// malformed value is refused before the replay trusts it, in an error that
// names the experiment, the row and the field, never an exception (a trial
// that ends before it began was an std::out_of_range).
BOOST_AUTO_TEST_CASE(a_malformed_store_is_refused_naming_the_experiment_the_row_and_the_field) {
  testing::temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  struct damage {
    std::string name;
    std::function<void(experiments::experiment_store&, int64_t, experiments::trial_row)> apply;
    std::string expected;  // after "replaying experiment N from PATH: "
  };
  const std::vector<damage> cases = {
      {"hyperparameters", [](experiments::experiment_store& s, int64_t, experiments::trial_row t) {
         t.hyperparameters = "{\"lr\": 0.1, ";
         (void)s.put_trial(t);
       }, "trials row '00001': hyperparameters does not parse: "},
      {"end before creation", [](experiments::experiment_store& s, int64_t, experiments::trial_row t) {
         t.seq_ended = 1;
         t.seq_created = 5;
         t.end_how = "completed";
         (void)s.put_trial(t);
       }, "trials row '00001': seq_ended 1 is not after its seq_created 5"},
      {"negative seq", [](experiments::experiment_store& s, int64_t, experiments::trial_row t) {
         t.seq_created = -3;
         (void)s.put_trial(t);
       }, "trials row '00001': seq_created -3 is not a sequence number"},
      {"trial id", [](experiments::experiment_store& s, int64_t, experiments::trial_row t) {
         t.id = "x'1";
         (void)s.put_trial(t);
       }, "trials row 'x'1': id 'x'1' is not a trial number"},
      {"state", [](experiments::experiment_store& s, int64_t, experiments::trial_row t) {
         t.state = "HALF";
         (void)s.put_trial(t);
       }, "trials row '00001': state 'HALF' is none of"},
      {"metric of no trial", [](experiments::experiment_store& s, int64_t id, experiments::trial_row) {
         (void)s.add_metrics({{id, "00077", 1, "loss", 0.5, 9999, 0}});
       }, "metrics row (trial '00077', seq 9999, name 'loss'): trial '00077' names no stored trial"},
      {"exploit of no source", [](experiments::experiment_store& s, int64_t id, experiments::trial_row t) {
         experiments::lineage_row l;
         l.experiment = id;
         l.trial = t.id;
         l.seq = 9998;
         l.source = "00099";
         l.before = l.after = t.hyperparameters;
         (void)s.add_lineage(l);
       }, "lineage row (trial '00001', seq 9998): source '00099' names no stored trial"},
  };
  for (const auto& d : cases) {
    BOOST_TEST_CONTEXT(d.name) {
      const int64_t id = new_experiment(*db);
      (void)run(*db, db, id, "asha", false, 10);  // cut short in trial 00001 (8 epochs each)
      auto rows = db->trials(id);
      BOOST_TEST_REQUIRE(rows.is_ok());
      BOOST_TEST_REQUIRE(rows->size() >= 2u);
      d.apply(*db, id, (*rows)[1]);
      BOOST_TEST_REQUIRE(db->flush().is_ok());
      const sweep_config c = settings("asha");
      const space s = sweep_space();
      auto search = make_searcher(s, c);
      auto sched = std::move(make_scheduler(c, s).value());
      auto stoppers = make_stoppers(c);
      result<replayed_sweep> r{status(error_code::internal, "not replayed")};
      BOOST_CHECK_NO_THROW(r = replay(*db, id, *search, *sched, stoppers, c, false));
      BOOST_TEST_REQUIRE(!r.is_ok());
      BOOST_TEST((r.error().code() == error_code::corrupt_data), r.error().to_string());
      const std::string prefix = "replaying experiment " + std::to_string(id) + " from ";
      BOOST_TEST(r.error().message().rfind(prefix, 0) == 0u, r.error().message());
      BOOST_TEST(r.error().message().find(": " + d.expected) != std::string::npos,
                 r.error().message());
    }
  }
}

// Trial numbers that skip one: a resumed sweep's next trial comes after
// the greatest, never taking a stored trial's id (and its directory).
BOOST_AUTO_TEST_CASE(a_resumed_sweep_numbers_new_trials_past_every_stored_one) {
  testing::temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  const int64_t id = new_experiment(*db);
  (void)run(*db, db, id, "asha", false, 10);
  auto rows = db->trials(id);
  BOOST_TEST_REQUIRE(rows.is_ok());
  BOOST_TEST_REQUIRE(rows->size() >= 2u);
  experiments::trial_row skipped = rows->back();
  skipped.id = "00042";
  skipped.seq_created = next_sequence(*db, id).value();
  skipped.seq_ended = 0;
  skipped.end_how.clear();
  skipped.state = "RUNNING";
  BOOST_TEST_REQUIRE(db->put_trial(skipped).is_ok());
  BOOST_TEST_REQUIRE(db->flush().is_ok());
  const sweep_config c = settings("asha");
  const space s = sweep_space();
  auto search = make_searcher(s, c);
  auto sched = std::move(make_scheduler(c, s).value());
  auto stoppers = make_stoppers(c);
  auto r = replay(*db, id, *search, *sched, stoppers, c, false);
  BOOST_TEST_REQUIRE(r.is_ok(), r.error().to_string());
  BOOST_TEST(r->next_trial == 43);
  BOOST_TEST(r->unfinished.count("00042") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
