// `dtrain report` end to end: the built binary over a store filled through
// the experiment_store interface; the page it writes is checked as text
// and, where Debian's chromium is installed, as the DOM a browser builds.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "dtrain/experiments/store.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A DTRAIN_HOME whose store holds experiment 1: a sweep of two trials
/// with three epochs of loss and validation_loss each (00002 is best).
struct report_home {
  temp_dir home;
  int runs = 0;

  report_home() {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    unsetenv("DTRAIN_ADDRESS");
    auto opened = experiments::open_sqlite_store(home.file("experiments.db"));
    BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
    experiments::experiment_store& s = **opened;
    experiments::experiment_row e;
    e.name = "sweep.yaml";
    e.kind = "tune";
    e.configuration = "name: sweep\nsearcher:\n  name: random\n# </script> stays text\n";
    e.config_hash = "00000000000000aa";
    e.state = "completed";
    e.metric = "validation_loss";
    e.minimize = true;
    e.created_at = 1700000000;
    BOOST_REQUIRE(s.create_experiment(e).value() == 1);
    int64_t seq = 0;
    for (int i = 0; i < 2; ++i) {
      experiments::trial_row t;
      t.experiment = 1;
      t.id = i == 0 ? "00001" : "00002";
      t.seq_created = i + 1;
      t.hyperparameters = i == 0 ? "{\"lr\": 0.1}" : "{\"lr\": 0.025}";
      t.state = "completed";
      t.best = i == 0 ? 0.75 : 0.125;
      t.last = t.best;
      t.epochs = 3;
      BOOST_REQUIRE(s.put_trial(t).is_ok());
      for (int epoch = 1; epoch <= 3; ++epoch) {
        std::vector<experiments::metric_row> rows;
        ++seq;
        for (const char* name : {"loss", "validation_loss"}) {
          experiments::metric_row m;
          m.experiment = 1;
          m.trial = t.id;
          m.epoch = epoch;
          m.name = name;
          m.value = (i == 0 ? 1.5 : 0.5) / epoch;
          m.seq = seq;
          rows.push_back(m);
        }
        BOOST_REQUIRE(s.add_metrics(rows).is_ok());
      }
    }
    BOOST_REQUIRE(s.flush().is_ok());
  }

  /// `cd DIR && dtrain report ARGS...`: its exit code, output in `out`.
  int run(const std::string& dir, const std::vector<std::string>& args, std::string& out) {
    std::string command = "cd '" + dir + "' && exec '" DTRAIN_BINARY "' report";
    for (const auto& a : args)
      command += " '" + a + "'";
    std::string log = home.file("run" + std::to_string(++runs) + ".log");
    child_process p({"/bin/sh", "-c", command}, log, "/dev/null");
    int code = p.wait(milliseconds(30000));
    out = read_file(log);
    BOOST_TEST_MESSAGE("dtrain report ... -> " << code << "\n" << out);
    return code;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(report_command)

BOOST_AUTO_TEST_CASE(the_page_holds_the_curves_the_trials_and_inlined_code_only) {
  report_home h;
  std::string out;
  BOOST_REQUIRE(h.run(h.home.path(), {"1", "-o", h.home.file("sweep.html")}, out) == 0);
  BOOST_TEST(contains(out, "wrote the report of experiment 1 (sweep.yaml, 2 trials)"), out);
  const std::string html = read_file(h.home.file("sweep.html"));
  // The data: both trials, their metrics per epoch, the best trial, the
  // configuration (a "</script>" in it escaped, so the element holds).
  BOOST_TEST(contains(html, "\"trial\":\"00001\""));
  BOOST_TEST(contains(html, "\"trial\":\"00002\""));
  BOOST_TEST(contains(html, "\"validation_loss\":0.25"));
  BOOST_TEST(contains(html, "\"loss\":1.5"));
  BOOST_TEST(contains(html, "\"best_trial\":\"1-00002\""));
  BOOST_TEST(contains(html, "searcher:"));
  BOOST_TEST(!contains(html, "# </script>"));
  // The code: uPlot, the dashboard's shared chart and table code, the
  // report's own; the trial table's header.
  BOOST_TEST(contains(html, "var uPlot=function"));
  BOOST_TEST(contains(html, "function curveChart("));
  BOOST_TEST(contains(html, "function showCharts("));  // the live page's too (common.js)
  BOOST_TEST(contains(html, "<th>hyperparameters</th>"));
  // Nothing from elsewhere.
  BOOST_TEST(!contains(html, "src=\"http"));
  BOOST_TEST(!contains(html, "href=\"http"));
  BOOST_TEST(!contains(html, "<script src="));
  BOOST_TEST(!contains(html, "<link "));
  BOOST_TEST(!contains(html, "fetch("));
  BOOST_TEST(!contains(html, "<!--dtrain:"));
}

BOOST_AUTO_TEST_CASE(the_page_ranks_a_sweeps_hyperparameters_or_says_why_it_cannot) {
  report_home h;
  {  // experiment 2: a sweep over lr and dummy whose loss only lr decides
    auto opened = experiments::open_sqlite_store(h.home.file("experiments.db"));
    BOOST_REQUIRE(opened.is_ok());
    experiments::experiment_row e;
    e.name = "importance.yaml";
    e.kind = "tune";
    e.configuration =
        "name: importance\nglobal_batch_size: 32\nhyperparameters:\n"
        "  lr: {type: double, minval: 0.0, maxval: 1.0}\n"
        "  dummy: {type: double, minval: 0.0, maxval: 1.0}\n"
        "searcher: {name: random, metric: validation_loss, max_trials: 30}\n";
    e.state = "completed";
    e.metric = "validation_loss";
    e.minimize = true;
    BOOST_REQUIRE((*opened)->create_experiment(e).value() == 2);
    for (int i = 0; i < 30; ++i) {
      experiments::trial_row t;
      t.experiment = 2;
      t.id = std::to_string(10000 + i).substr(1);
      const double lr = (i * 37 % 101) / 100.0, dummy = (i * 61 % 103) / 102.0;
      t.hyperparameters = "{\"dummy\": " + std::to_string(dummy) + ", \"lr\": " +
                          std::to_string(lr) + "}";
      t.state = "terminated";
      t.end_how = "completed";
      t.last = t.best = 10 * (lr - 0.3) * (lr - 0.3);
      BOOST_REQUIRE((*opened)->put_trial(t).is_ok());
    }
    BOOST_REQUIRE((*opened)->flush().is_ok());
  }
  std::string out;
  BOOST_REQUIRE(h.run(h.home.path(), {"2", "-o", h.home.file("two.html")}, out) == 0);
  const std::string html = read_file(h.home.file("two.html"));
  BOOST_TEST(contains(html, "\"importance\":{\"method\": \"fanova\""));
  BOOST_TEST(contains(html, "\"trials_used\": 30"));
  BOOST_TEST(contains(html, "\"parameters\": [{\"name\": \"lr\""));  // ranked first
  BOOST_TEST(contains(html, "<table id=\"importance\">"));
  // Experiment 1's stored configuration is a stub that names no
  // hyperparameter: the page says why there is no ranking instead.
  BOOST_REQUIRE(h.run(h.home.path(), {"1", "-o", h.home.file("one.html")}, out) == 0);
  BOOST_TEST(contains(read_file(h.home.file("one.html")),
                      "\"importance\":{\"error\":\"experiment 1: its stored configuration "
                      "does not parse"));
}

BOOST_AUTO_TEST_CASE(the_default_file_is_report_id_in_the_current_directory) {
  report_home h;
  temp_dir cwd;
  std::string out;
  BOOST_REQUIRE(h.run(cwd.path(), {"1"}, out) == 0);
  BOOST_TEST(std::filesystem::exists(cwd.file("report-1.html")), out);
}

BOOST_AUTO_TEST_CASE(an_unknown_experiment_and_an_unreadable_store_are_named) {
  report_home h;
  std::string out;
  BOOST_TEST(h.run(h.home.path(), {"42"}, out) == 1);
  BOOST_TEST(contains(out, "no experiment 42"), out);
  BOOST_TEST(!std::filesystem::exists(h.home.file("report-42.html")));

  BOOST_TEST(h.run(h.home.path(), {"1", "--store", h.home.file("none.db")}, out) == 1);
  BOOST_TEST(contains(out, "no experiment store exists yet"), out);
  BOOST_TEST(contains(out, h.home.file("none.db")), out);

  dtrain::testing::write_file(h.home.file("garbage.db"), std::string(4096, 'x'));
  BOOST_TEST(h.run(h.home.path(), {"1", "--store", h.home.file("garbage.db")}, out) == 1);
  BOOST_TEST(contains(out, "error:"), out);
  BOOST_TEST(contains(out, "garbage.db"), out);
}

BOOST_AUTO_TEST_CASE(chromium_renders_the_trial_table_and_the_charts) {
  const char* chromium = "/usr/bin/chromium";
  if (access(chromium, X_OK) != 0) {
    BOOST_TEST_MESSAGE("SKIPPED: " << chromium << " is not installed (apt-get install chromium)");
    return;
  }
  report_home h;
  std::string out;
  BOOST_REQUIRE(h.run(h.home.path(), {"1", "-o", h.home.file("sweep.html")}, out) == 0);
  temp_dir profile;
  const std::string dom = h.home.file("dom.html");
  child_process browser({"/bin/sh", "-c",
                         std::string(chromium) +
                             " --headless --no-sandbox --disable-gpu --disable-quic "
                             "--no-first-run --disable-background-networking "
                             "--disable-component-update --disable-sync --user-data-dir='" +
                             profile.path() + "' --dump-dom 'file://" +
                             h.home.file("sweep.html") + "' > '" + dom + "' 2>/dev/null"},
                        h.home.file("chromium.log"), "/dev/null");
  BOOST_REQUIRE_MESSAGE(browser.wait(milliseconds(90000)) == 0, read_file(h.home.file("chromium.log")));
  const std::string rendered = read_file(dom);
  // The rows report.js added to the table, and the charts uPlot drew.
  BOOST_TEST(contains(rendered, "<td>1-00001</td>"), rendered.substr(0, 4000));
  BOOST_TEST(contains(rendered, "<td>1-00002</td>"), rendered.substr(0, 4000));
  BOOST_TEST(contains(rendered, "{\"lr\":0.025}"));
  BOOST_TEST(contains(rendered, "class=\"uplot"), rendered.substr(0, 4000));
  BOOST_TEST(contains(rendered, "data-chart=\"validation_loss\""), rendered.substr(0, 4000));
  BOOST_TEST(contains(rendered, "trial 00002: validation_loss 0.125"));
}

BOOST_AUTO_TEST_SUITE_END()
