#include "dtrain/driver/node_logs.hpp"

#include <algorithm>

#include "caf/io/middleman.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/plugin_shipping.hpp"

namespace dtrain::actors {

std::string trainer_id(const std::string& trainer_text) {
  return trainer_text.substr(0, trainer_text.rfind(": "));
}

bool trainer_runs_trial(const std::string& id, const std::string& trial) {
  return !trial.empty() && ("-" + id + "-").find("-" + trial + "-") != std::string::npos;
}

std::vector<int32_t> trial_nodes(const cluster_status& st, const std::string& trial,
                                 std::vector<std::string>* trainers) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < st.trainers.size(); ++i) {
    const std::string id = trainer_id(st.trainers[i]);
    if (!trainer_runs_trial(id, trial))
      continue;
    if (trainers)
      trainers->push_back(id);
    if (i < st.trainer_nodes.size())
      for (int32_t p : st.trainer_nodes[i])
        if (std::find(out.begin(), out.end(), p) == out.end())
          out.push_back(p);
  }
  return out;
}

namespace {

// A read that timed out says which of two things happened, so that a
// failure names its cause: the connection to the node's process was gone
// (closed by a heartbeat timeout on either side, or the process left), or
// it was up and the node did not answer in time (overloaded or hung).
status explain_timeout(caf::scoped_actor& self, const node_actor& node, status s) {
  if (s.code() != error_code::timeout || !node || node.node() == self->node())
    return s;
  std::string host = "?";
  self->request(self->system().middleman().actor_handle(), std::chrono::seconds(2),
                caf::get_atom::value, node.node())
      .receive([&](const caf::node_id&, std::string& h, uint16_t) { host = std::move(h); },
               [&](caf::error&) {});
  if (host.empty())
    return status(s.code(), s.message() + " (the connection to the node's process is gone: "
                                           "closed by a heartbeat timeout or the process left)");
  if (host != "?")
    return status(s.code(), s.message() + " (its process is still connected, at " + host +
                                           ", but did not answer: overloaded or hung)");
  return s;
}

} // namespace

result<log_chunk> read_log_chunk(caf::scoped_actor& self, const log_source& from, int64_t offset,
                                 int32_t max_bytes, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const clock::time_point deadline = clock::now() + timeout;
  const std::string what = "reading the log of " + from.label;
  auto credential = log_credential(self->system(), from.node, from.info, offset, max_bytes,
                                   from.client, timeout);
  if (!credential)
    return explain_timeout(self, from.node, credential.error().with_context(what));
  const auto left = std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 deadline - clock::now()));
  result<log_chunk> out{status(error_code::internal, "no reply")};
  self->request(from.node, left, log_atom::value, offset, max_bytes, *credential)
      .receive([&](log_chunk& c) { out = std::move(c); },
               [&](caf::error& e) { out = explain_timeout(self, from.node, from_caf(e, what)); });
  return out;
}

} // namespace dtrain::actors
