// `dtrain status`: the cluster's nodes, slots and trainers.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

#include "command_line.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/cluster.hpp"

namespace dtrain::cli {

namespace {

using namespace dtrain::actors;

int run_status(const std::string& address, const security::tls_files& tls) {
  cluster::options o;
  o.tls = tls;
  auto found = require_cluster(address);
  if (!found)
    return fail(found.error());
  o.address = found->address;
  auto c = cluster::connect(o);
  if (!c)
    return fail(c.error());
  caf::scoped_actor self{(*c)->system()};
  int rc = 0;
  self->request((*c)->head(), std::chrono::seconds(10), status_atom::value, (*c)->session())
      .receive(
          [&](cluster_status& st) {
            std::printf("cluster at %s: %zu nodes\n", (*c)->where().c_str(), st.nodes.size());
            for (size_t i = 0; i < st.nodes.size(); ++i)
              std::printf("  node %zu  %-20s %-22s pid %-7d slots %d/%d in use  "
                          "GPUs %d/%d in use  cpus %s\n",
                          i, st.nodes[i].host.c_str(), st.nodes[i].address.c_str(),
                          st.nodes[i].pid, st.slots_used[i], st.nodes[i].cpu_slots,
                          i < st.gpus_used.size() ? st.gpus_used[i] : 0, st.nodes[i].gpus,
                          st.nodes[i].cpus > 0 ? std::to_string(st.nodes[i].cpus).c_str() : "-");
            std::printf("trainers: %zu\n", st.trainers.size());
            for (auto& t : st.trainers)
              std::printf("  %s\n", t.c_str());
            // Only when there are some: scripts read the lines above.
            if (!st.lost.empty())
              std::printf("lost nodes (not placed on): %zu\n", st.lost.size());
            for (const auto& l : st.lost)
              std::printf("  %-7s %-20s %-22s pid %-7d last heard %.0f s ago\n", l.state.c_str(),
                          l.info.host.c_str(), l.info.address.c_str(), l.info.pid,
                          l.last_heard_seconds);
            const head_load& h = st.load;
            std::printf("head: %lld requests served, %lld node polls; placement p50 %.3f ms, "
                        "p99 %.3f ms (the last %d)\n",
                        static_cast<long long>(h.requests), static_cast<long long>(h.node_polls),
                        h.place_p50_ms, h.place_p99_ms, h.placements_timed);
          },
          [&](caf::error& e) { rc = fail(from_caf(e, "asking the head for its status")); });
  return rc;
}

} // namespace

void add_status_command(CLI::App& app, command_list& out) {
  struct flags {
    std::string address;
    security::tls_files tls;
  };
  auto f = std::make_shared<flags>();
  auto* status_cmd = app.add_subcommand("status", "show the cluster's nodes and trainers");
  add_address_option(status_cmd, f->address, "an error");
  add_tls_options(status_cmd, f->tls);
  out.push_back({status_cmd, [f] { return run_status(f->address, f->tls); }});
}

} // namespace dtrain::cli
