// `dtrain train`'s progress: one bar for the group, drawn in place on a
// terminal (a pseudo-terminal from util-linux's script), plain epoch lines
// in a log, and every rank's lines with --verbose.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dtrain/driver/runs/progress_bar.hpp"
#include "support/child_process.hpp"
#include "support/test_util.hpp"

using dtrain::actors::progress_msg;
using dtrain::actors::format_duration;
using dtrain::actors::format_progress;
using dtrain::testing::child_process;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `dtrain train` of a 2-replica regression whose epochs take a few seconds
// (2,000,000 samples, batch 32), in its own DTRAIN_HOME; its output.
std::string train(const temp_dir& dir, const std::vector<std::string>& extra, bool terminal,
                  const std::string& name) {
  const std::string experiment = dir.file("regression.yaml");
  dtrain::testing::write_file(
      experiment, "name: regression\n"
                  "operator: linear_regression\n"
                  "hyperparameters: {lr: 0.01, samples: 2000000, features: 8, optimizer: sgd}\n"
                  "resources: {slots_per_trial: 2}\n"
                  "global_batch_size: 32\n"
                  "epochs: 1\n");
  setenv("DTRAIN_HOME", dir.file("home").c_str(), 1);
  std::string command = std::string(DTRAIN_BINARY) + " train " + experiment + " --embedded";
  for (const auto& arg : extra)
    command += " " + arg;
  std::vector<std::string> args{"/bin/sh", "-c", command};
  if (terminal)  // script runs the command on a pseudo-terminal of its own
    args = {"/usr/bin/script", "-qfec", command, "/dev/null"};
  const std::string log = dir.file(name + ".log");
  child_process p(args, log);
  BOOST_TEST(p.wait(milliseconds(180000)) == 0, name);
  return dtrain::testing::read_file(log);
}

// `dtrain tune` of two such trials (two replicas each, one after the
// other) on a pseudo-terminal; its output.
std::string tune_on_a_terminal(const temp_dir& dir) {
  const std::string experiment = dir.file("sweep.yaml");
  dtrain::testing::write_file(
      experiment, "name: sweep\n"
                  "operator: linear_regression\n"
                  "hyperparameters:\n"
                  "  lr: {type: categorical, vals: [0.01, 0.02]}\n"
                  "  samples: 2000000\n"
                  "  features: 8\n"
                  "  optimizer: sgd\n"
                  "searcher: {name: grid, metric: loss, smaller_is_better: true,\n"
                  "           max_concurrent_trials: 1, max_length: {epochs: 1}}\n"
                  "resources: {slots_per_trial: 2}\n"
                  "global_batch_size: 32\n");
  setenv("DTRAIN_HOME", dir.file("home").c_str(), 1);
  const std::string command = std::string(DTRAIN_BINARY) + " tune " + experiment + " --embedded";
  const std::string log = dir.file("tune.log");
  child_process p({"/usr/bin/script", "-qfec", command, "/dev/null"}, log);
  BOOST_TEST(p.wait(milliseconds(180000)) == 0);
  return dtrain::testing::read_file(log);
}

} // namespace

BOOST_AUTO_TEST_SUITE(train_progress)

BOOST_AUTO_TEST_CASE(the_bar_shows_the_groups_rate_and_the_time_left) {
  progress_msg p;
  p.epoch = 2;
  p.step = 50;
  p.steps_per_epoch = 100;
  p.loss = 0.5;
  p.seconds = 10;
  p.samples_per_second = 100;
  // 0.2 s a step: 50 left in this epoch and 100 in the third, 30 s.
  std::string bar = format_progress(p, 2, 3, 100);
  BOOST_TEST_MESSAGE(bar);
  BOOST_TEST(bar.rfind("epoch 2/3 [", 0) == 0u, bar);
  BOOST_TEST(contains(bar, " 50/100  loss 0.5000  200 samples/s  ETA 0:30"), bar);
  const size_t open = bar.find('['), close = bar.find(']');
  const std::string cells = bar.substr(open + 1, close - open - 1);
  BOOST_TEST(std::count(cells.begin(), cells.end(), '=') == static_cast<long>(cells.size() / 2),
             cells);
  BOOST_TEST(bar.size() <= 100u);
  // Too narrow for a bar: the numbers, cut to the width.
  std::string narrow = format_progress(p, 2, 3, 30);
  BOOST_TEST(!contains(narrow, "["), narrow);
  BOOST_TEST(narrow.size() <= 30u);
  // A resumed epoch skipped its first 25 batches: its pace is that of the
  // 25 it trained in the 10 s, 0.4 s a step, so 150 steps take 60 s.
  p.resumed_at = 25;
  BOOST_TEST(contains(format_progress(p, 2, 3, 100), "ETA 1:00"));
  p.resumed_at = 0;
  // No rate before the first step.
  p.step = 0;
  BOOST_TEST(contains(format_progress(p, 2, 3, 100), "ETA --"));
  BOOST_TEST(format_duration(62) == "1:02");
  BOOST_TEST(format_duration(3725) == "1:02:05");
  BOOST_TEST(format_duration(std::nan("")) == "--");
}

BOOST_AUTO_TEST_CASE(a_terminal_gets_one_bar_a_log_gets_lines_and_verbose_every_rank) {
  temp_dir dir;
  std::string tty = train(dir, {}, true, "tty");
  BOOST_TEST(contains(tty, "\r\x1b[Kepoch 1/1 ["), tty);
  BOOST_TEST(contains(tty, "samples/s  ETA "), tty);
  BOOST_TEST(contains(tty, "[chief] epoch 1/1"), tty);
  BOOST_TEST(!contains(tty, "[rank "), tty);

  std::string log = train(dir, {}, false, "plain");
  BOOST_TEST(contains(log, "[chief] epoch 1/1"), log);
  BOOST_TEST(!contains(log, "ETA"), log);
  BOOST_TEST(!contains(log, "\x1b"), log);
  BOOST_TEST(!contains(log, "[rank "), log);

  std::string verbose = train(dir, {"--verbose"}, false, "verbose");
  BOOST_TEST(contains(verbose, "[rank 0] epoch 1 step "), verbose);
  BOOST_TEST(contains(verbose, "[rank 1] epoch 1 step "), verbose);
  BOOST_TEST(!contains(verbose, "ETA"), verbose);
}

BOOST_AUTO_TEST_CASE(a_sweep_on_a_terminal_draws_a_bar_under_each_running_trial) {
  temp_dir dir;
  std::string out = tune_on_a_terminal(dir);
  // The table is redrawn in place with a bar line under a RUNNING row, for
  // both trials.
  for (const std::string trial : {"00000", "00001"}) {
    bool found = false;
    for (size_t at = out.find(trial + "  RUNNING"); at != std::string::npos && !found;
         at = out.find(trial + "  RUNNING", at + 1)) {
      const size_t next = out.find('\n', at);
      found = next != std::string::npos && out.compare(next + 1, 13, "  epoch 1/1 [") == 0;
    }
    BOOST_TEST(found, "no bar under trial " << trial << "'s row in:\n" << out);
  }
  BOOST_TEST(contains(out, "samples/s  ETA "), out);
  BOOST_TEST(contains(out, "2 trials in"), out);
}

BOOST_AUTO_TEST_SUITE_END()
