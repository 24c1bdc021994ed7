// `dtrain logs [--node N | --trial T] [--follow] [--tail K] [--grep TEXT]`:
// node logs read through the cluster. The head says which nodes there are
// (and which hold a trial's replicas); each node serves its own log file in
// bounded chunks (node_actor: log), so this works from any host that can
// reach the cluster, not only from the node's own.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/node_logs.hpp"
#include "command_line.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::cli {

namespace {

using namespace dtrain::actors;

constexpr std::chrono::seconds request_timeout{10};
constexpr std::chrono::milliseconds follow_interval{500};
// --tail reads back at most this much of a log to find its K lines.
constexpr int64_t max_tail_bytes = 16 << 20;

int fail(const status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

// One node's log as it is read: where to ask next and the line begun.
struct node_log {
  log_source source;  // its label: "node 0 (host, address)"
  std::string prefix; // "[node 0] " when several nodes are shown, else ""
  int64_t next = 0;
  std::string partial;
};

result<log_chunk> fetch(caf::scoped_actor& self, const node_log& n, int64_t offset,
                        int32_t max_bytes) {
  return read_log_chunk(self, n.source, offset, max_bytes, request_timeout);
}

// Prints the complete lines of `text` (after what was begun) that contain
// `grep`, keeping an unfinished last line for later.
void emit(node_log& n, const std::string& text, const std::string& grep) {
  n.partial += text;
  size_t begin = 0;
  for (size_t end = n.partial.find('\n'); end != std::string::npos;
       begin = end + 1, end = n.partial.find('\n', begin)) {
    const std::string line = n.partial.substr(begin, end - begin);
    if (grep.empty() || line.find(grep) != std::string::npos)
      std::printf("%s%s\n", n.prefix.c_str(), line.c_str());
  }
  n.partial.erase(0, begin);
  std::fflush(stdout);
}

// The whole log from its start.
status read_all(caf::scoped_actor& self, node_log& n, const std::string& grep) {
  for (;;) {
    auto c = fetch(self, n, n.next, max_log_chunk);
    if (!c)
      return c.error();
    emit(n, c->bytes, grep);
    n.next = c->next;
    if (c->bytes.empty() || c->next >= c->size)
      return status::ok();
  }
}

// The last `k` lines (that contain `grep`): chunks read backwards from the
// end until they hold k of them, the start, or max_tail_bytes.
status read_tail(caf::scoped_actor& self, node_log& n, int k, const std::string& grep) {
  auto last = fetch(self, n, -max_log_chunk, max_log_chunk);
  if (!last)
    return last.error();
  std::string text = last->bytes;
  int64_t start = last->offset;
  n.next = last->next;
  auto matching_lines = [&] {
    int found = 0;
    size_t begin = 0;
    for (size_t end = text.find('\n'); end != std::string::npos;
         begin = end + 1, end = text.find('\n', begin))
      if (grep.empty() || text.substr(begin, end - begin).find(grep) != std::string::npos)
        ++found;
    return found;
  };
  // One line more than k: the first one read may be cut.
  while (start > 0 && matching_lines() <= k && static_cast<int64_t>(text.size()) < max_tail_bytes) {
    const int64_t from = std::max<int64_t>(0, start - max_log_chunk);
    auto c = fetch(self, n, from, static_cast<int32_t>(start - from));
    if (!c)
      return c.error();
    text = c->bytes + text;
    start = c->offset;
  }
  if (start > 0)  // the first line began before what was read
    text.erase(0, text.find('\n') == std::string::npos ? text.size() : text.find('\n') + 1);
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t end = text.find('\n'); end != std::string::npos;
       begin = end + 1, end = text.find('\n', begin)) {
    std::string line = text.substr(begin, end - begin);
    if (grep.empty() || line.find(grep) != std::string::npos)
      lines.push_back(std::move(line));
  }
  for (size_t i = lines.size() > static_cast<size_t>(k) ? lines.size() - k : 0; i < lines.size(); ++i)
    std::printf("%s%s\n", n.prefix.c_str(), lines[i].c_str());
  std::fflush(stdout);
  n.partial = text.substr(begin);
  return status::ok();
}

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
  std::vector<node_log> logs;
  for (int32_t p : *chosen) {
    node_log n;
    const node_info& info = st->nodes[p];
    n.source.label = "node " + std::to_string(p) + " (" + info.host + ", " + info.address + ")";
    n.prefix = chosen->size() > 1 ? "[node " + std::to_string(p) + "] " : "";
    const int32_t id = p < static_cast<int32_t>(st->node_ids.size()) ? st->node_ids[p] : p;
    auto actor = (*c)->node_of(assignment{id, info, 0, -1}, request_timeout);
    if (!actor)
      return fail(actor.error());
    n.source.node = *actor;
    n.source.info = info;
    // Each read presents a credential: this client's certificate on TLS,
    // else the same-user MAC (a node's log is its user's).
    n.source.client = (*c)->client_files();
    logs.push_back(std::move(n));
  }
  roles::install_signal_handlers();
  for (auto& n : logs) {
    status read = o.tail >= 0 ? read_tail(self, n, o.tail, o.grep) : read_all(self, n, o.grep);
    if (!read)
      return fail(read);
  }
  while (o.follow && !roles::stop_requested()) {
    for (auto& n : logs) {
      auto chunk = fetch(self, n, n.next, max_log_chunk);
      if (!chunk)
        return roles::stop_requested() ? 0 : fail(chunk.error());
      if (chunk->size < n.next) {  // the file was truncated or replaced: anew
        n.next = 0;
        n.partial.clear();
        continue;
      }
      emit(n, chunk->bytes, o.grep);
      n.next = chunk->next;
    }
    for (auto waited = std::chrono::milliseconds(0); waited < follow_interval && !roles::stop_requested();
         waited += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& n : logs)  // a last line without its newline
    if (!o.follow && !n.partial.empty() &&
        (o.grep.empty() || n.partial.find(o.grep) != std::string::npos))
      std::printf("%s%s\n", n.prefix.c_str(), n.partial.c_str());
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
