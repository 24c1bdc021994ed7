// The dashboard's request handling (dashboard/http.hpp, routes.hpp): the
// target's parsing (path, percent-decoded query) and the router over a
// cluster held in memory. The input's first byte picks the method, the
// token (the right one, or as given) and whether the head answers; its
// lines are the target, the Authorization header, and texts that peers
// put in what the dashboard shows (a trainer's description as the head
// reports it, a trial's id, configuration and error, an event's message).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/memory_store.hpp"
#include "dtrain/dashboard/http.hpp"
#include "dtrain/dashboard/routes.hpp"
#include "dtrain/dashboard/source.hpp"

using namespace dtrain;

namespace {

const std::string token = "0123456789abcdef0123456789abcdef";

class fixed_source final : public dashboard::cluster_source {
public:
  bool head_down = false;
  actors::cluster_status cluster;
  std::shared_ptr<testing::memory_store> store_ = std::make_shared<testing::memory_store>();
  std::string log;

  result<actors::cluster_status> status() override {
    if (head_down)
      return unavailable("the head: request_timeout");
    return cluster;
  }
  result<std::shared_ptr<experiments::experiment_store>> store() override {
    if (head_down)
      return unavailable("the head's experiment store: request_timeout");
    return std::shared_ptr<experiments::experiment_store>(store_);
  }
  result<actors::log_chunk> node_log(int32_t position, int64_t offset, int32_t max_bytes) override {
    if (position != 0)
      return not_found("no node " + std::to_string(position));
    const int64_t size = static_cast<int64_t>(log.size());
    const int64_t from = std::clamp<int64_t>(offset < 0 ? size + offset : offset, 0, size);
    actors::log_chunk c;
    c.bytes = log.substr(static_cast<size_t>(from), static_cast<size_t>(max_bytes));
    c.offset = from;
    c.next = from + static_cast<int64_t>(c.bytes.size());
    c.size = size;
    c.path = "/home/n/node-0.log";
    return c;
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void fill(fixed_source& source, const std::vector<std::string>& peer_text) {
  auto text = [&](size_t i, const char* otherwise) {
    return i < peer_text.size() ? peer_text[i] : std::string(otherwise);
  };
  actors::node_info a;
  a.host = "a";
  a.address = "127.0.0.1:5001";
  a.cpu_slots = 4;
  source.cluster.nodes = {a};
  source.cluster.slots_used = {3};
  source.cluster.gpus_used = {0};
  source.cluster.replicas = {3};
  source.cluster.rss_bytes = {123456789};
  source.cluster.trainers = {text(0, "sweep-0: 4 replicas")};
  source.cluster.trainer_nodes = {{0}};
  source.cluster.last_heard_seconds = {0.5};
  source.log = text(4, "first line\n");
  experiments::experiment_row e;
  e.name = "sweep";
  e.kind = "tune";
  e.metric = "validation_loss";
  e.minimize = true;
  const int64_t id = *source.store_->create_experiment(e);
  experiments::trial_row r;
  r.experiment = id;
  r.id = text(1, "00000");
  r.state = "RUNNING";
  r.hyperparameters = text(2, "{\"lr\": 0.1}");
  r.error = text(3, "");
  r.best = 0.5;
  r.epochs = 2;
  (void)source.store_->put_trial(r);
  std::vector<experiments::metric_row> rows;
  rows.push_back({id, r.id, 1, "loss", 1.0, 1, 0});
  rows.push_back({id, r.id, 1, "validation_loss", experiments::no_value, 1, 0});
  (void)source.store_->add_metrics(rows);
  experiments::checkpoint_row c;
  c.experiment = id;
  c.trial = r.id;
  c.epoch = 1;
  c.path = "/ckpt/" + r.id + "/1";
  c.seq = 2;
  (void)source.store_->put_checkpoint(c);
  experiments::event_row ev;
  ev.experiment = id;
  ev.trial = r.id;
  ev.seq = 3;
  ev.kind = "note";
  ev.message = text(3, "");
  (void)source.store_->add_event(ev);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t flags = data[0];
  const auto lines =
      lines_of(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  fixed_source source;
  source.head_down = (flags & 4) != 0;
  fill(source, std::vector<std::string>(lines.begin() + 1, lines.end()));
  dashboard::router routes(source, token);
  dashboard::http_request r;
  r.method = (flags & 2) ? "POST" : "GET";
  r.target = lines[0];
  r.authorization = (flags & 1) ? "Bearer " + token : (lines.size() > 1 ? lines[1] : "");
  const dashboard::http_response out = routes.handle(r);
  if (out.status < 100 || out.status > 599)
    __builtin_trap();
  (void)routes.quick(r);
  const auto t = dashboard::parse_target(r.target);
  if (t.path.find('?') != std::string::npos)
    __builtin_trap();  // the path ends at the first '?'
  return 0;
}
