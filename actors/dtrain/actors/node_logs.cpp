#include "dtrain/actors/node_logs.hpp"

#include <algorithm>

#include "dtrain/actors/errors.hpp"

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

result<log_chunk> read_log_chunk(caf::scoped_actor& self, const node_actor& node, int64_t offset,
                                 int32_t max_bytes, std::chrono::milliseconds timeout,
                                 const std::string& label) {
  result<log_chunk> out{status(error_code::internal, "no reply")};
  self->request(node, timeout, log_atom::value, offset, max_bytes)
      .receive([&](log_chunk& c) { out = std::move(c); },
               [&](caf::error& e) { out = from_caf(e, "reading the log of " + label); });
  return out;
}

} // namespace dtrain::actors
