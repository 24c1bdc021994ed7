// `dtrain logs [--node N | --trial T] [--follow] [--tail K] [--grep TEXT]`:
// node logs read through the cluster. The head says which nodes there are
// (and which hold a trial's replicas); each node serves its own log file in
// bounded chunks (node_actor: log), so this works from any host that can
// reach the cluster, not only from the node's own.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/log_lines.hpp"
#include "command_line.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::cli {

namespace {

using namespace dtrain::actors;

constexpr std::chrono::seconds request_timeout{10};
constexpr std::chrono::milliseconds follow_interval{500};

// The positions (in the status's nodes) `o` asks for.
result<std::vector<int32_t>> chosen_nodes(const logs_options& o, const cluster_status& st,
                                          const std::string& where) {
  const int32_t count = static_cast<int32_t>(st.nodes.size());
  std::vector<int32_t> out;
  if (o.node >= 0) {
    if (o.node >= count)
      return not_found("no node " + std::to_string(o.node) + " in the cluster at " + where +
                       ": it has " + std::to_string(count) + " live nodes" +
                       (count > 0 ? " (0 to " + std::to_string(count - 1) + ")" : "") +
                       "; `dtrain status` lists them");
    out.push_back(o.node);
    return out;
  }
  if (!o.trial.empty()) {
    out = trial_nodes(st, o.trial);
    std::string names;
    for (const auto& t : st.trainers)
      names += (names.empty() ? "" : ", ") + trainer_id(t);
    if (out.empty())
      return not_found("no running trainer of the cluster at " + where + " holds trial " +
                       o.trial + " (trainers: " + (names.empty() ? "none" : names) + ")");
    return out;
  }
  for (int32_t i = 0; i < count; ++i)
    out.push_back(i);
  if (out.empty())
    return not_found("the cluster at " + where + " has no live nodes");
  return out;
}

} // namespace

int run_logs(const logs_options& o) {
  if (o.node >= 0 && !o.trial.empty())
    return fail(invalid_argument("give --node or --trial, not both"));
  auto address = require_cluster(o.address);
  if (!address)
    return fail(address.error());
  cluster::options co;
  co.address = address->address;
  co.tls = o.tls;
  auto c = cluster::connect(co);
  if (!c)
    return fail(c.error());
  caf::scoped_actor self{(*c)->system()};
  result<cluster_status> st{status(error_code::internal, "no reply")};
  self->request((*c)->head(), request_timeout, status_atom::value, (*c)->session())
      .receive([&](cluster_status& s) { st = std::move(s); },
               [&](caf::error& e) { st = from_caf(e, "asking the head for its status"); });
  if (!st)
    return fail(st.error());
  auto chosen = chosen_nodes(o, *st, (*c)->where());
  if (!chosen)
    return fail(chosen.error());
  std::vector<log_lines> logs;
  for (int32_t p : *chosen) {
    log_source source;
    const node_info& info = st->nodes[p];
    source.label = "node " + std::to_string(p) + " (" + info.host + ", " + info.address + ")";
    const std::string prefix = chosen->size() > 1 ? "[node " + std::to_string(p) + "] " : "";
    const int32_t id = p < static_cast<int32_t>(st->node_ids.size()) ? st->node_ids[p] : p;
    auto actor = (*c)->node_of(assignment{id, info, 0, -1}, request_timeout);
    if (!actor)
      return fail(actor.error());
    source.node = *actor;
    source.info = info;
    // Each read presents a credential: this client's certificate on TLS,
    // else the same-user MAC (a node's log is its user's).
    source.client = (*c)->client_files();
    logs.emplace_back(std::move(source), o.grep, [prefix](const std::string& line) {
      std::printf("%s%s\n", prefix.c_str(), line.c_str());
      std::fflush(stdout);
    }, request_timeout);
  }
  roles::install_signal_handlers();
  for (auto& n : logs) {
    status read = o.tail >= 0 ? n.read_tail(self, o.tail) : n.read_all(self);
    if (!read)
      return fail(read);
  }
  while (o.follow && !roles::stop_requested()) {
    for (auto& n : logs)
      if (status read = n.read_new(self); !read)
        return roles::stop_requested() ? 0 : fail(read);
    for (auto waited = std::chrono::milliseconds(0);
         waited < follow_interval && !roles::stop_requested();
         waited += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& n : logs)  // a last line without its newline
    if (!o.follow)
      n.flush();
  return 0;
}

void add_logs_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<logs_options>();
  auto* logs = app.add_subcommand("logs", "show the log of a node, or of the nodes holding a "
                                          "trial's replicas, read through the cluster");
  auto* node_opt = logs->add_option("--node", o->node, "the node's index (`dtrain status`)");
  logs->add_option("--trial", o->trial,
                   "the nodes holding this sweep trial's replicas (its id, as in 00003), or a "
                   "trainer's as `dtrain status` lists it")
      ->excludes(node_opt);
  logs->add_flag("--follow,-f", o->follow, "keep printing what is added, until Ctrl-C");
  logs->add_option("--tail", o->tail, "only the last K lines (default: the whole log)");
  logs->add_option("--grep", o->grep, "only the lines containing TEXT");
  add_address_option(logs, o->address, "an error");
  add_tls_options(logs, o->tls);
  out.push_back({logs, [o] { return run_logs(*o); }});
}

} // namespace dtrain::cli
