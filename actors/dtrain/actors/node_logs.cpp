#include "dtrain/actors/node_logs.hpp"

#include <algorithm>

#include "dtrain/actors/errors.hpp"
#include "dtrain/actors/plugin_shipping.hpp"

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

result<log_chunk> read_log_chunk(caf::scoped_actor& self, const log_source& from, int64_t offset,
                                 int32_t max_bytes, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const clock::time_point deadline = clock::now() + timeout;
  const std::string what = "reading the log of " + from.label;
  auto credential = log_credential(self->system(), from.node, from.info, offset, max_bytes,
                                   from.client, timeout);
  if (!credential)
    return credential.error().with_context(what);
  const auto left = std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 deadline - clock::now()));
  result<log_chunk> out{status(error_code::internal, "no reply")};
  self->request(from.node, left, log_atom::value, offset, max_bytes, *credential)
      .receive([&](log_chunk& c) { out = std::move(c); },
               [&](caf::error& e) { out = from_caf(e, what); });
  return out;
}

} // namespace dtrain::actors
