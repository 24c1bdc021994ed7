// The dashboard's routes over a fake cluster_source (an in-memory store
// and a fixed status): tokens, JSON documents, Prometheus text, errors.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>

#include "support/memory_store.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/dashboard/prometheus.hpp"
#include "dtrain/dashboard/report.hpp"
#include "dtrain/dashboard/routes.hpp"

using namespace dtrain;
using namespace dtrain::dashboard;

namespace {

const std::string token = "0123456789abcdef0123456789abcdef";

using std::chrono::milliseconds;

// A store that answers as `inner` does, each read `delay` late: the store
// of a head that answers, slowly. Counts the reads.
class slow_store final : public experiments::experiment_store {
public:
  slow_store(std::shared_ptr<experiments::experiment_store> inner, milliseconds delay)
    : inner_(std::move(inner)), delay_(delay) {}
  std::atomic<int> reads{0};

  result<int64_t> create_experiment(const experiments::experiment_row& e) override {
    return inner_->create_experiment(e);
  }
  status update_experiment(const experiments::experiment_row& e) override {
    return inner_->update_experiment(e);
  }
  result<experiments::experiment_row> experiment(int64_t id) override {
    return late(), inner_->experiment(id);
  }
  result<std::vector<experiments::experiment_row>> experiments() override {
    return late(), inner_->experiments();
  }
  status delete_experiment(int64_t id) override { return inner_->delete_experiment(id); }
  status put_trial(const experiments::trial_row& t) override { return inner_->put_trial(t); }
  result<std::vector<experiments::trial_row>> trials(int64_t experiment) override {
    return late(), inner_->trials(experiment);
  }
  status add_metrics(const std::vector<experiments::metric_row>& rows) override {
    return inner_->add_metrics(rows);
  }
  result<std::vector<experiments::metric_row>> metrics(int64_t experiment,
                                                 const std::string& trial) override {
    return late(), inner_->metrics(experiment, trial);
  }
  status put_checkpoint(const experiments::checkpoint_row& c) override {
    return inner_->put_checkpoint(c);
  }
  result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t experiment,
                                                         const std::string& trial) override {
    return late(), inner_->checkpoints(experiment, trial);
  }
  status add_lineage(const experiments::lineage_row& l) override { return inner_->add_lineage(l); }
  result<std::vector<experiments::lineage_row>> lineage(int64_t experiment) override {
    return late(), inner_->lineage(experiment);
  }
  status add_event(const experiments::event_row& e) override { return inner_->add_event(e); }
  result<std::vector<experiments::event_row>> events(int64_t experiment,
                                               const std::string& trial) override {
    return late(), inner_->events(experiment, trial);
  }
  status flush() override { return inner_->flush(); }
  std::string where() const override { return "a slow store"; }

private:
  void late() {
    ++reads;
    std::this_thread::sleep_for(delay_);
  }
  std::shared_ptr<experiments::experiment_store> inner_;
  milliseconds delay_;
};

// A source that answers from memory, or fails as a head that does not
// answer would (at once, or the status request after status_delay), or
// answers slowly (through `slow`, when set).
class fake_source final : public cluster_source {
public:
  bool head_down = false;
  bool status_down = false;  // the status request alone fails
  milliseconds status_delay{0};
  actors::cluster_status cluster;
  std::shared_ptr<testing::memory_store> store_ = std::make_shared<testing::memory_store>();
  std::shared_ptr<slow_store> slow;

  result<actors::cluster_status> status() override {
    std::this_thread::sleep_for(status_delay);
    if (head_down || status_down)
      return unavailable("the head: request_timeout");
    return cluster;
  }
  result<std::shared_ptr<experiments::experiment_store>> store() override {
    if (head_down)
      return unavailable("the head's experiment store: request_timeout");
    if (slow)
      return std::shared_ptr<experiments::experiment_store>(slow);
    return std::shared_ptr<experiments::experiment_store>(store_);
  }
  // Node i's log is logs[i]; read as node_actor reads its file. The last
  // request's arguments are kept.
  std::vector<std::string> logs;
  std::pair<int64_t, int32_t> asked{0, 0};
  result<actors::log_chunk> node_log(int32_t position, int64_t offset, int32_t max_bytes) override {
    asked = {offset, max_bytes};
    if (head_down)
      return unavailable("the head: request_timeout");
    if (position < 0 || position >= static_cast<int32_t>(logs.size()))
      return not_found("no node " + std::to_string(position));
    const std::string& text = logs[position];
    const int64_t size = static_cast<int64_t>(text.size());
    const int64_t from = std::clamp<int64_t>(offset < 0 ? size + offset : offset, 0, size);
    actors::log_chunk c;
    c.bytes = text.substr(from, max_bytes);
    c.offset = from;
    c.next = from + static_cast<int64_t>(c.bytes.size());
    c.size = size;
    c.path = "/home/n/node-" + std::to_string(position) + ".log";
    return c;
  }
};

struct fixture {
  fake_source source;
  router routes{source, token};

  fixture() {
    actors::node_info a;
    a.host = "a";
    a.address = "127.0.0.1:5001";
    a.cpu_slots = 4;
    actors::node_info b = a;
    b.host = "b";
    b.address = "127.0.0.1:5002";
    b.cpu_slots = 2;
    b.gpus = 1;
    source.cluster.nodes = {a, b};
    source.cluster.slots_used = {3, 0};
    source.cluster.gpus_used = {0, 1};
    source.cluster.replicas = {3, 1};
    source.cluster.rss_bytes = {123456789, -1};  // b has not told the head yet
    source.cluster.trainers = {"sweep-0: 4 replicas"};
    source.cluster.trainer_nodes = {{0, 1}};
    source.cluster.last_heard_seconds = {0.5, 1.25};
    actors::lost_node gone;
    gone.node_id = 2;
    gone.info = a;
    gone.info.host = "c";
    gone.info.address = "127.0.0.1:5003";
    gone.state = "dead";
    gone.lost_at = 1700000000;
    gone.last_heard_seconds = 30;
    source.cluster.lost = {gone};
    source.logs = {"first line\nsecond \"line\"\n", ""};
    experiments::experiment_row e;
    e.name = "sweep";
    e.kind = "tune";
    e.metric = "validation_loss";
    e.minimize = true;
    const int64_t id = *source.store_->create_experiment(e);
    for (const char* t : {"00000", "00001"}) {
      experiments::trial_row r;
      r.experiment = id;
      r.id = t;
      r.state = t == std::string("00000") ? "RUNNING" : "TERMINATED";
      r.hyperparameters = "{\"lr\": 0.1}";
      r.best = t == std::string("00000") ? 0.5 : 0.25;
      r.epochs = 2;
      (void)source.store_->put_trial(r);
    }
    int64_t seq = 1;
    for (int64_t epoch : {1, 2}) {
      std::vector<experiments::metric_row> rows;
      rows.push_back({id, "00000", epoch, "loss", 1.0 / static_cast<double>(epoch), seq, 0});
      rows.push_back({id, "00000", epoch, "validation_loss", experiments::no_value, seq, 0});
      rows.push_back({id, "00000", epoch, "samples_per_second", 1000.5, seq, 0});
      rows.push_back({id, "00000", epoch, "step_seconds", 0.032, seq, 0});
      rows.push_back({id, "00000", epoch, "allreduce_seconds", 0.25, seq, 0});
      rows.push_back({id, "00000", epoch, "restarts", 1, seq, 0});
      rows.push_back({id, "00000", epoch, "memory.optimizer_bytes", 4096, seq, 0});
      (void)source.store_->add_metrics(rows);
      ++seq;
    }
  }

  http_response get(const std::string& target, const std::string& auth = "Bearer " + token) {
    return routes.handle({"GET", target, auth});
  }
};

// Whether `s` is well-formed UTF-8 (Unicode's table 3-7), checked here
// independently of dtrain::utf8.
bool well_formed_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (b < 0x80)
      n = 1;
    else if (b >= 0xC2 && b <= 0xDF)
      n = 2;
    else if (b >= 0xE0 && b <= 0xEF)
      n = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4)
      n = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    else
      return false;
    if (i + n > s.size())
      return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF))
        return false;
    }
    i += n;
  }
  return true;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(dashboard_routes, fixture)

BOOST_AUTO_TEST_CASE(the_page_and_its_files_need_no_token) {
  http_response page = get("/", "");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(contains(page.content_type, "text/html"));
  BOOST_TEST(contains(page.body, "uPlot.iife.min.js"));
  BOOST_TEST(get("/app.js", "").status == 200);
  http_response charts = get("/charts.js", "");
  BOOST_TEST(charts.status == 200);
  BOOST_TEST(contains(charts.content_type, "text/javascript"));
  BOOST_TEST(contains(page.body, "charts.js"));
  BOOST_TEST(get("/common.js", "").status == 200);  // the code `dtrain report`'s page uses
  BOOST_TEST(get("/vendor/uPlot.iife.min.js", "").body.size() > 50000u);
  BOOST_TEST(get("/vendor/uPlot.min.css", "").status == 200);
}

BOOST_AUTO_TEST_CASE(everything_else_answers_401_without_the_token) {
  for (const char* path : {"/api/v1/cluster", "/api/v1/experiments", "/metrics", "/nothing"}) {
    http_response r = get(path, "");
    BOOST_TEST(r.status == 401, path);
    BOOST_TEST(contains(r.body, "token"));
    BOOST_TEST(get(path, "Bearer " + std::string(32, 'f')).status == 401, path);
    BOOST_TEST(get(path, "Bearer " + token.substr(1)).status == 401, path);
  }
  BOOST_TEST(get("/api/v1/cluster?token=" + token, "").status == 200);
  BOOST_TEST(get("/nothing").status == 404);
  BOOST_TEST(routes.handle({"POST", "/api/v1/cluster", "Bearer " + token}).status == 405);
}

BOOST_AUTO_TEST_CASE(cluster_lists_nodes_slots_gpus_and_trainers) {
  http_response r = get("/api/v1/cluster");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "\"address\":\"127.0.0.1:5002\""), r.body);
  BOOST_TEST(contains(r.body, "\"slots\":{\"used\":3,\"total\":6}"), r.body);
  BOOST_TEST(contains(r.body, "\"gpus\":{\"used\":1,\"total\":1}"), r.body);
  BOOST_TEST(contains(r.body, "{\"id\":\"sweep-0\",\"replicas\":4,\"nodes\":[0,1]}"), r.body);
}

BOOST_AUTO_TEST_CASE(cluster_says_when_the_head_last_heard_from_each_node_and_lists_lost_ones) {
  http_response r = get("/api/v1/cluster");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "\"state\":\"alive\",\"last_heard_seconds\":0.5}"), r.body);
  BOOST_TEST(contains(r.body, "\"state\":\"alive\",\"last_heard_seconds\":1.25}"), r.body);
  BOOST_TEST(contains(r.body, "\"lost\":[{\"node_id\":2,\"host\":\"c\",\"address\":\"127.0.0.1:5003\","
                              "\"pid\":0,\"state\":\"dead\",\"lost_at\":1700000000,"
                              "\"last_heard_seconds\":30.0}]"),
             r.body);
  // The lost node is not one of the nodes: those stay the usable ones.
  BOOST_TEST(!contains(r.body.substr(0, r.body.find("\"lost\"")), "127.0.0.1:5003"), r.body);
}

BOOST_AUTO_TEST_CASE(a_nodes_log_comes_in_chunks_from_an_offset_or_from_its_end) {
  http_response all = get("/api/v1/nodes/0/log?offset=0");
  BOOST_TEST(all.status == 200);
  BOOST_TEST(all.body == "{\"node\":0,\"path\":\"/home/n/node-0.log\",\"offset\":0,\"next\":25,"
                         "\"size\":25,\"text\":\"first line\\nsecond \\\"line\\\"\\n\"}");
  http_response tail = get("/api/v1/nodes/0/log?offset=-14&max=7");
  BOOST_TEST(tail.status == 200);
  BOOST_TEST(contains(tail.body, "\"offset\":11,\"next\":18,\"size\":25,\"text\":\"second \""),
             tail.body);
  // No offset: the tail of the default size; max is bounded by the node's chunk.
  BOOST_TEST(get("/api/v1/nodes/0/log").status == 200);
  BOOST_TEST(source.asked.first == -router::default_log_bytes);
  BOOST_TEST(source.asked.second == router::default_log_bytes);
  BOOST_TEST(get("/api/v1/nodes/0/log?offset=0&max=999999999").status == 200);
  BOOST_TEST(source.asked.second == actors::max_log_chunk);
  BOOST_TEST(contains(get("/api/v1/nodes/1/log").body, "\"size\":0,\"text\":\"\""));
  BOOST_TEST(get("/api/v1/nodes/7/log").status == 404);
  BOOST_TEST(get("/api/v1/nodes/x/log").status == 400);
  BOOST_TEST(get("/api/v1/nodes/-1/log").status == 400);
  BOOST_TEST(get("/api/v1/nodes/0/log?offset=end").status == 400);
  BOOST_TEST(get("/api/v1/nodes/0/log?max=-5").status == 400);
  BOOST_TEST(get("/api/v1/nodes/0/log", "").status == 401);
  source.head_down = true;
  http_response down = get("/api/v1/nodes/0/log");
  BOOST_TEST(down.status == 503);
  BOOST_TEST(contains(down.body, "request_timeout"), down.body);
}

BOOST_AUTO_TEST_CASE(a_log_that_is_not_utf8_still_comes_as_utf8_json) {
  // Binary output, a character whole, and one cut by the end of the file.
  source.logs = {std::string("bin \xFF\xFE ok \xE2\x82\xAC cut \xE2\x82", 20)};
  http_response r = get("/api/v1/nodes/0/log?offset=0");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(r.body == "{\"node\":0,\"path\":\"/home/n/node-0.log\",\"offset\":0,\"next\":20,"
                       "\"size\":20,\"text\":\"bin \xEF\xBF\xBD\xEF\xBF\xBD ok \xE2\x82\xAC cut "
                       "\xEF\xBF\xBD\"}");
  BOOST_TEST(well_formed_utf8(r.body));
  actors::log_chunk c;
  c.bytes = "\xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 \x80";
  c.path = "/logs/\xFF.log";
  BOOST_TEST(well_formed_utf8(dashboard::log_json(3, c)), dashboard::log_json(3, c));
}

BOOST_AUTO_TEST_CASE(experiments_and_trials_carry_state_hyperparameters_and_best) {
  http_response e = get("/api/v1/experiments");
  BOOST_TEST(e.status == 200);
  BOOST_TEST(contains(e.body, "\"trials\":2,\"best\":0.25"), e.body);
  http_response t = get("/api/v1/experiments/1/trials");
  BOOST_TEST(t.status == 200);
  BOOST_TEST(contains(t.body, "\"id\":\"1-00001\",\"trial\":\"00001\",\"state\":\"TERMINATED\","
                              "\"hyperparameters\":{\"lr\": 0.1}"),
             t.body);
  BOOST_TEST(get("/api/v1/experiments/9/trials").status == 404);
  BOOST_TEST(get("/api/v1/experiments/one/trials").status == 400);
}

BOOST_AUTO_TEST_CASE(importance_ranks_a_sweeps_hyperparameters_or_says_why_not) {
  experiments::experiment_row e;
  e.name = "importance";
  e.kind = "tune";
  e.configuration =
      "name: importance\nglobal_batch_size: 32\nhyperparameters:\n"
      "  lr: {type: double, minval: 0.0, maxval: 1.0}\n"
      "  dummy: {type: double, minval: 0.0, maxval: 1.0}\n"
      "searcher: {name: random, metric: validation_loss, max_trials: 20}\n";
  e.metric = "validation_loss";
  const int64_t id = *source.store_->create_experiment(e);
  for (int i = 0; i < 20; ++i) {
    experiments::trial_row r;
    r.experiment = id;
    r.id = std::to_string(10000 + i).substr(1);
    const double lr = (i * 37 % 101) / 100.0, dummy = (i * 61 % 103) / 102.0;
    r.hyperparameters = "{\"dummy\": " + std::to_string(dummy) + ", \"lr\": " +
                        std::to_string(lr) + "}";
    r.end_how = "completed";
    r.last = 10 * (lr - 0.3) * (lr - 0.3);
    BOOST_REQUIRE(source.store_->put_trial(r).is_ok());
  }
  const std::string path = "/api/v1/experiments/" + std::to_string(id) + "/importance";
  http_response r = get(path + "?method=fast");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "{\"method\": \"fast\", \"metric\": \"validation_loss\", "
                              "\"trials_used\": 20, \"trials_total\": 20, \"parameters\": "
                              "[{\"name\": \"lr\""),
             r.body);
  BOOST_TEST(contains(get(path).body, "\"method\": \"fanova\""));
  // Experiment 1 has no stored configuration: 200, and the reason.
  r = get("/api/v1/experiments/1/importance");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "{\"error\":\"experiment 1"), r.body);
  BOOST_TEST(get(path + "?method=shap").status == 400);
  BOOST_TEST(get("/api/v1/experiments/9/importance").status == 404);
  BOOST_TEST(get("/api/v1/experiments/one/importance").status == 400);
}

BOOST_AUTO_TEST_CASE(pareto_gives_every_trials_objectives_and_marks_the_front) {
  experiments::experiment_row e;
  e.name = "two-objectives";
  e.kind = "tune";
  e.configuration =
      "name: two-objectives\nglobal_batch_size: 32\nhyperparameters:\n"
      "  lr: {type: double, minval: 0.0, maxval: 1.0}\n"
      "searcher: {name: random, max_trials: 3,\n"
      "  metrics: [{name: validation_loss, mode: min}, {name: accuracy, mode: max}]}\n";
  e.metric = "validation_loss";
  const int64_t id = *source.store_->create_experiment(e);
  // (loss, accuracy): 00000 and 00001 trade off, 00002 is worse than 00001 in both.
  const double values[3][2] = {{0.2, 0.7}, {0.4, 0.9}, {0.5, 0.8}};
  for (int i = 0; i < 3; ++i) {
    experiments::trial_row r;
    r.experiment = id;
    r.id = "0000" + std::to_string(i);
    r.state = "TERMINATED";
    r.end_how = "completed";
    BOOST_REQUIRE(source.store_->put_trial(r).is_ok());
    for (int k = 0; k < 2; ++k) {
      experiments::metric_row m;
      m.experiment = id;
      m.trial = r.id;
      m.epoch = 1;
      m.name = k == 0 ? "validation_loss" : "accuracy";
      m.value = values[i][k];
      m.seq = 1000 + 2 * i + k;
      BOOST_REQUIRE(source.store_->add_metrics({m}).is_ok());
    }
  }
  BOOST_REQUIRE(source.store_->flush().is_ok());
  const std::string path = "/api/v1/experiments/" + std::to_string(id) + "/pareto";
  http_response r = get(path);
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "{\"objectives\":[{\"metric\":\"validation_loss\",\"minimize\":true},"
                              "{\"metric\":\"accuracy\",\"minimize\":false}]"),
             r.body);
  const std::string key = std::to_string(id) + "-0000";
  BOOST_TEST(contains(r.body, "\"id\":\"" + key + "1\",\"trial\":\"00001\",\"state\":\"TERMINATED\","
                              "\"pareto\":true,\"values\":[0.4,0.9]"),
             r.body);
  BOOST_TEST(contains(r.body, "\"trial\":\"00002\",\"state\":\"TERMINATED\",\"pareto\":false"),
             r.body);
  // A stored configuration that does not parse: 200, the reason, no
  // objectives (the page leaves the section hidden).
  experiments::experiment_row stub;
  stub.name = "stub";
  stub.kind = "tune";
  stub.configuration = "name: stub\n";
  const int64_t stub_id = *source.store_->create_experiment(stub);
  r = get("/api/v1/experiments/" + std::to_string(stub_id) + "/pareto");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "{\"error\":\""), r.body);
  BOOST_TEST(contains(r.body, "\"objectives\":[]"), r.body);
  BOOST_TEST(get("/api/v1/experiments/9/pareto").status == 404);
  BOOST_TEST(get("/api/v1/experiments/one/pareto").status == 400);
}

BOOST_AUTO_TEST_CASE(metrics_come_per_report_and_since_skips_the_epochs_seen) {
  http_response all = get("/api/v1/trials/1-00000/metrics");
  BOOST_TEST(all.status == 200);
  BOOST_TEST(contains(all.body, "{\"epoch\":1,"), all.body);
  BOOST_TEST(contains(all.body, "\"loss\":0.5"), all.body);
  BOOST_TEST(contains(all.body, "\"validation_loss\":null"), all.body);  // NaN: not JSON
  http_response since = get("/api/v1/trials/1-00000/metrics?since=1");
  BOOST_TEST(!contains(since.body, "{\"epoch\":1,"), since.body);
  BOOST_TEST(contains(since.body, "{\"epoch\":2,"), since.body);
  BOOST_TEST(get("/api/v1/trials/00000/metrics").status == 400);
  BOOST_TEST(get("/api/v1/trials/1-00000/metrics?since=x").status == 400);
  BOOST_TEST(get("/api/v1/trials/1-00000/metrics?after_seq=x").status == 400);
  BOOST_TEST(get("/api/v1/trials/5-00000/metrics").status == 404);
}

BOOST_AUTO_TEST_CASE(after_seq_skips_the_reports_seen_even_when_an_epoch_comes_again) {
  // A restarted trial reports epoch 2 again (seq 3): since=2 would miss it.
  std::vector<experiments::metric_row> rows;
  rows.push_back({1, "00000", 2, "loss", 0.4, 3, 0});
  (void)source.store_->add_metrics(rows);
  http_response r = get("/api/v1/trials/1-00000/metrics?after_seq=2");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.body, "\"after_seq\":2,\"reports\":[{\"epoch\":2,\"seq\":3,"), r.body);
  BOOST_TEST(!contains(r.body, "\"seq\":2,"), r.body);
  BOOST_TEST(contains(get("/api/v1/trials/1-00000/metrics?after_seq=3").body, "\"reports\":[]"));
  BOOST_TEST(!contains(get("/api/v1/trials/1-00000/metrics?since=2").body, "\"seq\":3"));
  BOOST_TEST(contains(get("/api/v1/trials/1-00000/metrics").body, "\"after_seq\":null"));
}

BOOST_AUTO_TEST_CASE(checkpoints_come_in_seq_order_with_null_for_a_missing_metric) {
  auto& s = *source.store_;
  // Written out of order, and another trial's: the answer is the trial's, by seq.
  // fields: experiment, trial, epoch, path, metric, valid, seq, time
  BOOST_REQUIRE(s.put_checkpoint({1, "00000", 2, "/ck/00000/2", experiments::no_value, true, 7, 2.5}).is_ok());
  BOOST_REQUIRE(s.put_checkpoint({1, "00000", 1, "/ck/00000/1", 0.75, false, 4, 1.25}).is_ok());
  BOOST_REQUIRE(s.put_checkpoint({1, "00001", 1, "/ck/00001/1", 0.5, true, 5, 1.5}).is_ok());
  http_response r = get("/api/v1/trials/1-00000/checkpoints");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.content_type, "application/json"));
  BOOST_TEST(r.body == "{\"id\":\"1-00000\",\"experiment\":1,\"trial\":\"00000\",\"checkpoints\":["
                       "{\"epoch\":1,\"path\":\"/ck/00000/1\",\"metric\":0.75,\"valid\":false,"
                       "\"seq\":4,\"time\":1.25},"
                       "{\"epoch\":2,\"path\":\"/ck/00000/2\",\"metric\":null,\"valid\":true,"
                       "\"seq\":7,\"time\":2.5}]}",
             r.body);
  http_response none = get("/api/v1/trials/1-00009/checkpoints");
  BOOST_TEST(none.status == 200);
  BOOST_TEST(contains(none.body, "\"checkpoints\":[]"), none.body);
  BOOST_TEST(get("/api/v1/trials/5-00000/checkpoints").status == 404);  // no experiment 5
  BOOST_TEST(get("/api/v1/trials/00000/checkpoints").status == 400);
  BOOST_TEST(get("/api/v1/trials/1-00000/checkpoints", "").status == 401);
}

BOOST_AUTO_TEST_CASE(events_come_in_seq_order_with_kind_epoch_and_message) {
  auto& s = *source.store_;
  // fields: experiment, trial, seq, epoch, time, kind, message
  BOOST_REQUIRE(s.add_event({1, "00000", 9, 2, 3.5, "recovered",
                             "running again with 2 of 2 replicas (generation 1) from the "
                             "checkpoint of epoch 1"}).is_ok());
  BOOST_REQUIRE(s.add_event({1, "00000", 8, 2, 3.25, "failure",
                             "failure 1 of at most 3: node \"b\" died"}).is_ok());
  BOOST_REQUIRE(s.add_event({1, "00001", 10, 1, 4, "gave_up", "not this trial's"}).is_ok());
  http_response r = get("/api/v1/trials/1-00000/events");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(r.body == "{\"id\":\"1-00000\",\"experiment\":1,\"trial\":\"00000\",\"events\":["
                       "{\"seq\":8,\"time\":3.25,\"epoch\":2,\"kind\":\"failure\","
                       "\"message\":\"failure 1 of at most 3: node \\\"b\\\" died\"},"
                       "{\"seq\":9,\"time\":3.5,\"epoch\":2,\"kind\":\"recovered\","
                       "\"message\":\"running again with 2 of 2 replicas (generation 1) from the "
                       "checkpoint of epoch 1\"}]}",
             r.body);
  http_response none = get("/api/v1/trials/1-00009/events");
  BOOST_TEST(none.status == 200);
  BOOST_TEST(contains(none.body, "\"events\":[]"), none.body);
  BOOST_TEST(get("/api/v1/trials/5-00000/events").status == 404);
  BOOST_TEST(get("/api/v1/trials/x/events").status == 400);
  source.head_down = true;
  BOOST_TEST(get("/api/v1/trials/1-00000/events").status == 503);
  BOOST_TEST(get("/api/v1/trials/1-00000/checkpoints").status == 503);
}

BOOST_AUTO_TEST_CASE(a_head_that_does_not_answer_gives_503_with_the_reason) {
  source.head_down = true;
  http_response r = get("/api/v1/cluster");
  BOOST_TEST(r.status == 503);
  BOOST_TEST(contains(r.body, "request_timeout"), r.body);
  BOOST_TEST(get("/api/v1/experiments").status == 503);
  http_response m = get("/metrics");
  BOOST_TEST(m.status == 200);
  BOOST_TEST(contains(m.body, "dtrain_up{part=\"cluster\"} 0\n"), m.body);
  BOOST_TEST(!contains(m.body, "dtrain_nodes"), m.body);
}

BOOST_AUTO_TEST_CASE(a_slow_head_gets_503_once_one_answers_requests_exceed_the_head_timeout) {
  // 12 experiments: their list and each one's trials are 13 reads, 1.3 s
  // at 100 ms each; the deadline of 300 ms stops after about 3.
  for (int i = 0; i < 11; ++i) {
    experiments::experiment_row e;
    e.name = "more-" + std::to_string(i);
    (void)source.store_->create_experiment(e);
  }
  source.slow = std::make_shared<slow_store>(source.store_, milliseconds(100));
  router slow_routes{source, token, milliseconds(300)};
  http_response r = slow_routes.handle({"GET", "/api/v1/experiments", "Bearer " + token});
  BOOST_TEST(r.status == 503);
  BOOST_TEST(contains(r.body, "/api/v1/experiments: the head is slow"), r.body);
  BOOST_TEST(contains(r.body, "300 ms"), r.body);
  BOOST_TEST(source.slow->reads.load() < 8);
  source.slow->reads = 0;
  http_response m = slow_routes.handle({"GET", "/metrics", "Bearer " + token});
  BOOST_TEST(m.status == 503);
  BOOST_TEST(contains(m.body, "/metrics: the head is slow"), m.body);
  BOOST_TEST(source.slow->reads.load() < 8);
  // One trial's list is 2 reads: within the deadline.
  http_response t = slow_routes.handle({"GET", "/api/v1/experiments/1/trials", "Bearer " + token});
  BOOST_TEST(t.status == 200, t.body);
  // The page's files never ask the head.
  BOOST_TEST(slow_routes.handle({"GET", "/app.js", ""}).status == 200);
  BOOST_TEST(slow_routes.quick({"GET", "/app.js", ""}).has_value());
  BOOST_TEST(!slow_routes.quick({"GET", "/api/v1/cluster", ""}).has_value());
}

BOOST_AUTO_TEST_CASE(a_head_that_times_out_still_gives_metrics_saying_it_is_down) {
  // The status request fails after the whole deadline: /metrics answers
  // at once with both parts down, without asking the store.
  source.status_down = true;
  source.status_delay = milliseconds(400);
  source.slow = std::make_shared<slow_store>(source.store_, milliseconds(0));
  router slow_routes{source, token, milliseconds(300)};
  http_response m = slow_routes.handle({"GET", "/metrics", "Bearer " + token});
  BOOST_TEST(m.status == 200);
  BOOST_TEST(contains(m.body, "dtrain_up{part=\"cluster\"} 0\n"), m.body);
  BOOST_TEST(contains(m.body, "dtrain_up{part=\"store\"} 0\n"), m.body);
  BOOST_TEST(source.slow->reads.load() == 0);
}

BOOST_AUTO_TEST_CASE(prometheus_text_has_help_type_and_the_running_trials_samples) {
  http_response r = get("/metrics");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(contains(r.content_type, "version=0.0.4"));
  const std::string& m = r.body;
  BOOST_TEST(contains(m, "# HELP dtrain_nodes "), m);
  BOOST_TEST(contains(m, "# TYPE dtrain_nodes gauge\ndtrain_nodes 2\n"), m);
  BOOST_TEST(contains(m, "dtrain_trainers 1\n"), m);
  BOOST_TEST(contains(m, "# TYPE dtrain_trainer_replicas gauge\n"
                         "dtrain_trainer_replicas{trainer=\"sweep-0\"} 4\n"), m);
  BOOST_TEST(contains(m, "dtrain_slots{state=\"used\"} 3\ndtrain_slots{state=\"total\"} 6\n"), m);
  BOOST_TEST(contains(m, "dtrain_trials{state=\"running\"} 1\n"), m);
  BOOST_TEST(contains(m, "dtrain_trials{state=\"terminated\"} 1\n"), m);
  BOOST_TEST(contains(m, "dtrain_trial_epoch{experiment=\"1\",trial=\"00000\"} 2\n"), m);
  BOOST_TEST(contains(m, "dtrain_trial_samples_per_second{experiment=\"1\",trial=\"00000\"} 1000.5\n"),
             m);
  BOOST_TEST(contains(m, "dtrain_trial_step_seconds{experiment=\"1\",trial=\"00000\"} 0.032\n"), m);
  BOOST_TEST(contains(m, "dtrain_trial_allreduce_seconds{experiment=\"1\",trial=\"00000\"} 0.25\n"),
             m);
  BOOST_TEST(contains(m, "dtrain_trial_restarts{experiment=\"1\",trial=\"00000\"} 1\n"), m);
  BOOST_TEST(contains(m, "# TYPE dtrain_trial_optimizer_state_bytes gauge\n"
                         "dtrain_trial_optimizer_state_bytes{experiment=\"1\",trial=\"00000\"} 4096\n"),
             m);
  BOOST_TEST(contains(m, "\ndtrain_trial_restarts_total 1\n"), m);
  BOOST_TEST(contains(m, "dtrain_node_slots_used{node=\"0\",address=\"127.0.0.1:5001\"} 3\n"
                         "dtrain_node_slots_used{node=\"1\",address=\"127.0.0.1:5002\"} 0\n"), m);
  BOOST_TEST(contains(m, "dtrain_node_replicas{node=\"1\",address=\"127.0.0.1:5002\"} 1\n"), m);
  BOOST_TEST(contains(m, "dtrain_node_resident_memory_bytes{node=\"0\",address=\"127.0.0.1:5001\"} "
                         "123456789\n"), m);
  BOOST_TEST(!contains(m, "dtrain_node_resident_memory_bytes{node=\"1\""), m);
  BOOST_TEST(!contains(m, "trial=\"00001\""), m);  // ended trials leave the label sets
  BOOST_TEST(contains(m, "dtrain_head_resident_memory_bytes "), m);
  BOOST_TEST(m.back() == '\n');
}

BOOST_AUTO_TEST_CASE(label_values_and_help_are_escaped) {
  prometheus_text p;
  p.family("x_total", "a \\ b\nc", "counter");
  p.sample(std::nan(""), {{"l", "q\"\\\n"}});
  p.sample(-INFINITY);
  BOOST_TEST(p.text() == "# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\n"
                         "x_total{l=\"q\\\"\\\\\\n\"} NaN\nx_total -Inf\n");
}

BOOST_AUTO_TEST_CASE(trial_keys_name_the_experiment_and_the_trial) {
  int64_t e = 0;
  std::string t;
  BOOST_TEST(parse_trial_key("12-00003", e, t));
  BOOST_TEST(e == 12);
  BOOST_TEST(t == "00003");
  BOOST_TEST(!parse_trial_key("-00003", e, t));
  BOOST_TEST(!parse_trial_key("12-", e, t));
  BOOST_TEST(!parse_trial_key("a-1", e, t));
  BOOST_TEST(trial_key(12, "00003") == "12-00003");
}

BOOST_AUTO_TEST_CASE(a_report_inlines_every_file_and_the_api_documents) {
  report_input in;
  in.experiment.id = 3;
  in.experiment.name = "</script><script>alert(1)</script>";
  in.experiment.metric = "validation_loss";
  in.experiment.minimize = true;
  experiments::trial_row t;
  t.experiment = 3;
  t.id = "00000";
  t.best = 0.5;
  in.trials = {t};
  experiments::metric_row m;
  m.experiment = 3;
  m.trial = "00000";
  m.epoch = 1;
  m.seq = 1;
  m.name = "validation_loss";
  m.value = 0.5;
  in.metrics = {{m}};
  // The same documents as the API's.
  const std::string json = report_json(in);
  BOOST_TEST(contains(json, trials_json(in.experiment, in.trials)));
  BOOST_TEST(contains(json, metrics_json(3, "00000", in.metrics[0], 0)));
  BOOST_TEST(contains(json, "\"best_trial\":\"3-00000\""));
  auto html = report_html(in);
  BOOST_REQUIRE(html.is_ok());
  BOOST_TEST(!contains(*html, "<!--dtrain:"));
  BOOST_TEST(!contains(*html, "<script src="));
  BOOST_TEST(!contains(*html, "alert(1)</script>"));  // the name cannot end the data's element
  BOOST_TEST(contains(*html, "function curveChart("));  // common.js, the live page's too
}

// The rows' JSON, byte for byte as the dashboard's pages and scripts read
// it: key order, nulls for NaN, a stored hyperparameters object inlined
// (anything else quoted), trials keyed across experiments.
BOOST_AUTO_TEST_CASE(rows_are_written_to_json_with_their_keys_in_a_fixed_order) {
  experiments::experiment_row e;
  e.id = 3;
  e.name = "a\"b";
  e.kind = "tune";
  e.metric = "loss";
  e.minimize = true;
  e.created_at = 1.5;
  e.ended_at = experiments::no_value;
  e.owner = "host 42";
  experiments::trial_row t;
  t.experiment = 3;
  t.id = "00001";
  t.hyperparameters = R"({"lr": 0.1})";
  t.restarts = 2;
  t.best = 0.25;
  t.epochs = 4;
  experiments::trial_row u = t;
  u.id = "00002";
  u.hyperparameters = "not an object";
  u.best = experiments::no_value;
  BOOST_TEST(experiments_json({e}, {{t, u}}) ==
             R"({"experiments":[{"id":3,"name":"a\"b","kind":"tune","state":"running","metric":"loss","minimize":true,"created_at":1.5,"updated_at":0.0,"ended_at":null,"owner":"host 42","message":"","trials":2,"best":0.25}]})");
  BOOST_TEST(trials_json(e, {t, u}) ==
             R"({"experiment":{"id":3,"name":"a\"b","kind":"tune","state":"running","metric":"loss","minimize":true,"created_at":1.5,"updated_at":0.0,"ended_at":null,"owner":"host 42","message":""},"trials":[{"id":"3-00001","trial":"00001","state":"pending","hyperparameters":{"lr": 0.1},"epochs":4,"best":0.25,"last":null,"restarts":2,"error":"","end_how":"","started_at":0.0,"ended_at":0.0})"
             R"(,{"id":"3-00002","trial":"00002","state":"pending","hyperparameters":"not an object","epochs":4,"best":null,"last":null,"restarts":2,"error":"","end_how":"","started_at":0.0,"ended_at":0.0}]})");
  BOOST_TEST(checkpoints_json(3, "00001", {{3, "00001", 2, "/c/2", 0.5, false, 7, 1.25}}) ==
             R"({"id":"3-00001","experiment":3,"trial":"00001","checkpoints":[{"epoch":2,"path":"/c/2","metric":0.5,"valid":false,"seq":7,"time":1.25}]})");
  BOOST_TEST(events_json(3, "00001", {{3, "00001", 5, 2, 0.5, "restart", "lost"}}) ==
             R"({"id":"3-00001","experiment":3,"trial":"00001","events":[{"seq":5,"time":0.5,"epoch":2,"kind":"restart","message":"lost"}]})");
}

BOOST_AUTO_TEST_SUITE_END()
