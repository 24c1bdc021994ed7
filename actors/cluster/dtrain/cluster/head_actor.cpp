#include "dtrain/cluster/head_actor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "caf/io/middleman.hpp"

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_auth.hpp"
#include "dtrain/cluster/head_table.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

bool head_detail::polls_fit_one_slice(int64_t usable) {
  return usable * 1000 <= head_polls_per_second * head_rss_interval.count();
}

int32_t head_detail::poll_share(int64_t usable) {
  if (usable <= 0)
    return 0;
  if (polls_fit_one_slice(usable))
    return static_cast<int32_t>(usable);
  return static_cast<int32_t>(head_polls_per_second * head_poll_tick.count() / 1000);
}

namespace {

using namespace head_detail;

// The most lost nodes a status lists (the newest): a cluster whose nodes
// come and go for weeks must not answer with all of them.
constexpr size_t max_lost_listed = 32;

const char* state_name(node_state s) {
  switch (s) {
  case node_state::alive: return "alive";
  case node_state::suspect: return "suspect";
  case node_state::dead: return "dead";
  }
  return "unknown";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A node must offer as many GPUs as it lists, each index once, and figures
// within the head's bounds (head_actor.hpp).
status check_registration(const node_info& info) {
  if (info.cpu_slots < 0 || info.cpu_slots > max_node_cpu_slots)
    return invalid_argument("node " + info.host + " offers " + std::to_string(info.cpu_slots) +
                            " CPU slots: cpu_slots must be between 0 and " +
                            std::to_string(max_node_cpu_slots));
  if (info.gpus < 0 || info.gpus > max_node_gpus || info.gpu_devices.size() > size_t{max_node_gpus})
    return invalid_argument("node " + info.host + " offers " + std::to_string(info.gpus) +
                            " GPUs and lists " + std::to_string(info.gpu_devices.size()) +
                            ": gpus must be between 0 and " + std::to_string(max_node_gpus));
  std::set<int32_t> distinct(info.gpu_devices.begin(), info.gpu_devices.end());
  if (info.gpus != static_cast<int32_t>(info.gpu_devices.size()))
    return invalid_argument("node " + info.host + " offers " + std::to_string(info.gpus) +
                            " GPUs but lists " + std::to_string(info.gpu_devices.size()) +
                            " device indices");
  if (distinct.size() != info.gpu_devices.size() || (!distinct.empty() && *distinct.begin() < 0))
    return invalid_argument("node " + info.host + " lists a GPU index twice or a negative one");
  return status::ok();
}

cluster_status make_status(const head_state& s) {
  cluster_status st;
  std::vector<int32_t> replicas(s.nodes.size(), 0);
  for (auto& [key, h] : s.trainers) {
    for (auto& [node, c] : h.cpu)
      replicas[node] += c;
    for (auto& [node, index] : h.gpus)
      ++replicas[node];
  }
  std::map<int32_t, int32_t> position;  // head index -> position in st.nodes
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const auto& node = s.nodes[i];
    if (!usable(node)) {
      if (!node.replaced)
        st.lost.push_back(lost_node{static_cast<int32_t>(i), node.info, state_name(node.state),
                                    node.lost_at, seconds_since(node.heard)});
      continue;
    }
    position[static_cast<int32_t>(i)] = static_cast<int32_t>(st.nodes.size());
    st.nodes.push_back(node.info);
    st.slots_used.push_back(node.cpu_used);
    st.gpus_used.push_back(static_cast<int32_t>(node.gpus_held.size()));
    st.node_ids.push_back(static_cast<int32_t>(i));
    st.replicas.push_back(replicas[i]);
    st.rss_bytes.push_back(node.rss_bytes);
    st.last_heard_seconds.push_back(seconds_since(node.heard));
  }
  for (auto& [key, h] : s.trainers) {
    int32_t count = static_cast<int32_t>(h.gpus.size());
    std::set<int32_t> held;
    for (auto& [node, c] : h.cpu) {
      count += c;
      held.insert(node);
    }
    for (auto& [node, device] : h.gpus)
      held.insert(node);
    st.trainers.push_back(key.first + ": " + std::to_string(count) + " replicas");
    std::vector<int32_t> where;
    for (int32_t node : held)
      if (auto it = position.find(node); it != position.end())
        where.push_back(it->second);
    st.trainer_nodes.push_back(std::move(where));
  }
  st.load.node_polls = s.node_polls;
  st.load.requests = s.requests;
  if (!s.place_ms.empty()) {
    std::vector<double> times = s.place_ms;
    auto at = [&times](double q) {
      const auto k = static_cast<size_t>(q * static_cast<double>(times.size() - 1));
      std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(k), times.end());
      return times[k];
    };
    st.load.place_p50_ms = at(0.5);
    st.load.place_p99_ms = at(0.99);
    st.load.placements_timed = static_cast<int32_t>(times.size());
  }
  if (st.lost.size() > max_lost_listed)  // in table order: the oldest first
    st.lost.erase(st.lost.begin(), st.lost.end() - static_cast<std::ptrdiff_t>(max_lost_listed));
  return st;
}

// Keeps one placement's handler time (head_load), in a ring.
void time_placement(head_state& s, std::chrono::steady_clock::time_point began) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  if (s.place_ms.size() < placement_window)
    s.place_ms.push_back(ms);
  else
    s.place_ms[s.place_next] = ms;
  s.place_next = (s.place_next + 1) % placement_window;
}

// One probe of suspect node `index`: a status request with a short timeout.
// An answer makes it usable again; a node whose actor is gone is dead; no
// answer schedules the next probe. Never blocks the head.
void probe(head_actor::pointer self, const std::shared_ptr<head_state>& state, int32_t index) {
  if (index < 0 || index >= static_cast<int32_t>(state->nodes.size()))
    return;
  auto& node = state->nodes[index];
  if (node.state != node_state::suspect) {
    node.probing = false;
    return;
  }
  ++state->node_polls;
  self->request(node.handle, head_probe_timeout, status_atom::value)
      .then(
          [=](int32_t) {
            auto& n = state->nodes[index];
            n.probing = false;
            n.heard = std::chrono::steady_clock::now();
            if (n.state == node_state::suspect)
              set_state(n, node_state::alive);
          },
          [=](caf::error& e) {
            auto& n = state->nodes[index];
            if (e == caf::sec::request_receiver_down) {
              set_state(n, node_state::dead);
              n.probing = false;
              return;
            }
            self->delayed_send(self, head_probe_interval, probe_atom::value, index);
          });
}

// A trainer could not reach node `index`: stop placing on it (its own
// connection to the head may not have noticed yet) and probe it until it
// answers again or goes down.
void suspect(head_actor::pointer self, head_state& s, int32_t index) {
  if (index < 0 || index >= static_cast<int32_t>(s.nodes.size()))
    return;
  auto& node = s.nodes[index];
  if (node.state != node_state::alive)
    return;
  set_state(node, node_state::suspect);
  if (!node.probing) {
    node.probing = true;
    self->delayed_send(self, head_probe_interval, probe_atom::value, index);
  }
}

// The sender's process, for authentication (none for an anonymous send).
caf::node_id sender_node(head_actor::pointer self) {
  const auto& sender = self->current_sender();
  return sender ? sender->node() : caf::node_id{};
}

// One stderr line on the head for every refusal, naming the peer's process
// and, once the middleman answers, its address.
void report_refusal(head_actor::pointer self, const caf::node_id& peer, const std::string& text) {
  auto print = [peer, text](const std::string& where) {
    std::fprintf(stderr, "dtrain head: refused %s (process %s): %s\n", where.c_str(),
                 caf::to_string(peer).c_str(), text.c_str());
    std::fflush(stderr);
  };
  auto mm = self->system().middleman().actor_handle();
  self->request(mm, std::chrono::seconds(1), caf::get_atom::value, peer)
      .then([=](const caf::node_id&, const std::string& host,
                uint16_t port) { print(host.empty() ? "a peer" : host + ":" + std::to_string(port)); },
            [=](caf::error&) { print("a peer"); });
}

// A process that proved and has no watched actor left is watched again
// through the sender of its request, so that its proof lives as long as
// the process (head_auth).
void watch_sender(head_actor::pointer self, head_auth& auth) {
  const auto& sender = self->current_sender();
  if (sender && sender->node() != self->node() && auth.idle(sender->node()) &&
      auth.watch(sender->address()))
    self->monitor(sender);
}

// The guard of every request but hello, prove and register: an error
// reply (and a line on the head) unless `session` (the request's token) is
// one of the sender's process with role `needed`, or the head's own.
template <class T>
std::optional<caf::result<T>> refuse(head_actor::pointer self, head_auth& auth,
                                     const std::string& session, security::role needed,
                                     const std::string& request) {
  const caf::node_id peer = sender_node(self);
  status s = auth.allowed_session(session, peer, self->node(), needed, request);
  if (s) {
    watch_sender(self, auth);
    return std::nullopt;
  }
  report_refusal(self, peer, s.message());
  return caf::result<T>(to_caf(s));
}

} // namespace

namespace {

// One slice of the RSS rounds (head_actor.hpp): asks the next
// poll_share() usable nodes, in table order from where the last slice
// stopped (answers land in node_entry), then schedules the next slice:
// a round's worth in one go while they fit the budget, else a slice every
// head_poll_tick. Never blocks the head.
void poll_rss(head_actor::pointer self, const std::shared_ptr<head_state>& state) {
  auto& nodes = state->nodes;
  const auto usable_count = std::count_if(nodes.begin(), nodes.end(), usable);
  int32_t left = poll_share(usable_count);
  for (size_t seen = 0; seen < nodes.size() && left > 0; ++seen) {
    const size_t i = state->poll_next++ % nodes.size();
    if (!usable(nodes[i]))
      continue;
    --left;
    ++state->node_polls;
    self->request(nodes[i].handle, head_probe_timeout, rss_atom::value)
        .then(
            [=](int64_t bytes) {
              state->nodes[i].rss_bytes = bytes;
              state->nodes[i].heard = std::chrono::steady_clock::now();
            },
            [](caf::error&) {});  // a slow node keeps its last figure
  }
  if (!nodes.empty())
    state->poll_next %= nodes.size();
  // One wake-up per round while all fit in one (each wake-up of an idle
  // head costs CPU), slices past that.
  const bool whole = polls_fit_one_slice(usable_count);
  state->slices_per_round = whole ? 1 : head_rss_interval / head_poll_tick;
  self->delayed_send(self, whole ? head_rss_interval : head_poll_tick, rss_atom::value);
}

// Forgets the idle processes (head_auth) the middleman no longer has a
// connection to: a short-lived client (`dtrain status`) leaves no watched
// actor behind whose down message would tell. Never blocks the head.
void sweep_idle(head_actor::pointer self, const std::shared_ptr<head_auth>& auth) {
  const std::vector<caf::node_id> idle = auth->idle_peers();
  if (idle.empty())
    return;  // always so without TLS
  auto mm = self->system().middleman().actor_handle();
  for (const caf::node_id& peer : idle)
    self->request(mm, head_probe_timeout, caf::get_atom::value, peer)
        .then(
            [=](const caf::node_id&, const std::string& host, uint16_t) {
              if (!host.empty() || !auth->idle(peer))
                return;
              std::fprintf(stderr, "dtrain head: process %s left (no connection): its proof "
                           "is forgotten\n", caf::to_string(peer).c_str());
              auth->forget(peer);
            },
            [](caf::error&) {});  // the next round asks again
}

// Whether `handle` may register as node `info` with `session` (the
// checks of register and rejoin); a refusal is also a line on the head.
status admissible(head_actor::pointer self, head_auth& auth, const node_info& info,
                  const node_actor& handle, const std::string& session) {
  // The session token, not the sender's node id (which a peer can
  // claim), shows that the registering process proved a node
  // certificate (head_auth::session).
  const caf::node_id peer = sender_node(self);
  if (auto s = auth.allowed_session(session, peer, self->node(), security::role::node,
                                    "registering node " + info.host);
      !s) {
    report_refusal(self, peer, s.message());
    return s;
  }
  DTRAIN_RETURN_IF_ERROR(check_registration(info));
  // The node actor must live in the process that asks (the one that
  // proved a node certificate): else a node could enlist any actor of
  // any process, unproven, as a node, or register a null handle that
  // placement would hand to trainers.
  if (!handle || (peer != handle.node() && !(peer == caf::node_id{} && handle.node() == self->node()))) {
    const std::string text =
        "registering node " + info.host + ": " +
        (handle ? "its node actor lives in process " + caf::to_string(handle.node()) +
                      ", not in the registering process " + caf::to_string(peer)
                : std::string("no node actor given"));
    report_refusal(self, peer, text);
    return invalid_argument(text);
  }
  return status::ok();
}

// Enters an admissible node (head_table.hpp: admit_node, count_hosted),
// watched from now on; its index.
int32_t take_node(head_actor::pointer self, head_state& s, head_auth& auth, node_info info,
                  const node_actor& handle, int32_t previous,
                  const std::vector<hosted_replica>& hosted) {
  self->monitor(handle);
  auth.watch(handle.address());  // its process's proof lives with it
  // A node back at the address of a dead one (restarted): the dead one
  // is no longer news.
  for (auto& old : s.nodes)
    if (old.state == node_state::dead && !info.address.empty() &&
        old.info.address == info.address && old.addr != handle.address())
      old.replaced = true;
  const int32_t index = admit_node(s, std::move(info), handle, previous);
  for (const caf::actor& owner : count_hosted(s, index, hosted))
    self->monitor(owner);  // gone: its units are given back
  return index;
}

} // namespace

head_actor::behavior_type head_impl(head_actor::pointer self,
                                    experiments::store_opener open_store, std::string store_path,
                                    std::shared_ptr<head_auth> auth) {
  using security::role;
  auto state = std::make_shared<head_state>();
  // It ends with the head, but not the other way round (no link): a store
  // failure must not stop the cluster. Not detached (see service.hpp). It
  // checks each message's session against the head's (thread-safe) view.
  auto service = self->spawn(experiments::service_impl, std::move(open_store),
                             std::move(store_path), auth->sessions());
  self->attach_functor([service](const caf::error&) {
    caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto& node : state->nodes)
      if (node.addr == dm.source) {
        set_state(node, node_state::dead);
        // Its process left (or its node actor did): its proof goes with it,
        // so a later process that gets the same node id (the same pid on
        // that host) proves anew.
        auth->forget(dm.source.node());
      }
    // A remote actor gone with its connection: its process's proof goes
    // too. Else it was one actor of a process that may live on.
    if (dm.reason == caf::exit_reason::remote_link_unreachable)
      auth->forget(dm.source.node());
    else
      auth->unwatch(dm.source);
    std::vector<placement_key> gone;
    for (auto& [key, h] : state->trainers)
      if (h.owner == dm.source)
        gone.push_back(key);
    for (auto& id : gone)
      release(*state, id);
  });
  self->send(self, rss_atom::value);  // starts the RSS rounds (and the idle sweeps)
  return {
    [=](register_atom, node_info& info, node_actor& handle,
        const std::string& session) -> caf::result<int32_t> {
      ++state->requests;
      if (status s = admissible(self, *auth, info, handle, session); !s)
        return to_caf(s);
      return take_node(self, *state, *auth, std::move(info), handle, -1, {});
    },
    [=](rejoin_atom, node_info& info, node_actor& handle, int32_t previous,
        const std::vector<hosted_replica>& hosted,
        const std::string& session) -> caf::result<int32_t> {
      ++state->requests;
      if (status s = admissible(self, *auth, info, handle, session); !s)
        return to_caf(s);
      return take_node(self, *state, *auth, std::move(info), handle, previous, hosted);
    },
    [=](place_atom, const std::string& trainer, int32_t n, bool gpu, caf::actor& owner,
        const std::string& session) -> caf::result<std::vector<assignment>> {
      ++state->requests;
      if (auto no = refuse<std::vector<assignment>>(self, *auth, session, role::client,
                                                    "placing trainer " + trainer))
        return *no;
      if (n < 1)
        return to_caf(invalid_argument("a trainer needs at least one replica"));
      // A re-placement (restart) replaces the old placement: its own, the
      // one of this id and owner, never another driver's.
      const placement_key key{trainer, owner.address()};
      const auto began = std::chrono::steady_clock::now();
      release(*state, key);
      auto placed = place(*state, trainer, n, gpu, owner);
      time_placement(*state, began);
      if (state->trainers.count(key) && owner) {
        self->monitor(owner);
        auth->watch(owner.address());  // its driver's proof lives with it
      }
      return placed;
    },
    [=](release_atom, const std::string& trainer, const caf::actor& owner,
        const std::string& session) -> caf::result<caf::ok_atom> {
      ++state->requests;
      if (auto no = refuse<caf::ok_atom>(self, *auth, session, role::client,
                                         "releasing trainer " + trainer))
        return *no;
      release(*state, placement_key{trainer, owner.address()});
      return caf::ok_atom::value;
    },
    [=](resize_atom, const std::string& trainer, const std::vector<assignment>& keep,
        int32_t extra, bool gpu, const caf::actor& owner,
        const std::string& session) -> caf::result<std::vector<assignment>> {
      ++state->requests;
      if (auto no = refuse<std::vector<assignment>>(self, *auth, session, role::client,
                                                    "resizing trainer " + trainer))
        return *no;
      if (extra < 0 || extra > max_replicas_per_placement)
        return to_caf(invalid_argument("resize: " + std::to_string(extra) + " more replicas"));
      return resize(*state, placement_key{trainer, owner.address()}, keep, extra, gpu, owner);
    },
    [=](unreach_atom, int32_t index, const std::string& session) -> caf::result<caf::ok_atom> {
      ++state->requests;
      if (auto no = refuse<caf::ok_atom>(self, *auth, session, role::client,
                                         "reporting a node unreachable"))
        return *no;
      suspect(self, *state, index);
      return caf::ok_atom::value;
    },
    [=](probe_atom, int32_t index) {
      // The head's own timer only (suspect() starts one chain per node): a
      // probe from anyone else would start another chain that never ends.
      if (self->current_sender().get() == self->ctrl())
        probe(self, state, index);
    },
    [=](rss_atom) {
      // The head's own timer only: a peer cannot make it ask more often.
      if (self->current_sender().get() == self->ctrl()) {
        poll_rss(self, state);
        if (state->poll_ticks++ % state->slices_per_round == 0)  // once a round
          sweep_idle(self, auth);
      }
    },
    [=](status_atom, const std::string& session) -> caf::result<cluster_status> {
      ++state->requests;
      if (auto no = refuse<cluster_status>(self, *auth, session, role::client,
                                           "the cluster's status"))
        return *no;
      return make_status(*state);
    },
    [=](caf::get_atom, int32_t index, const std::string& session) -> caf::result<node_actor> {
      ++state->requests;
      if (auto no = refuse<node_actor>(self, *auth, session, role::client, "looking up a node"))
        return *no;
      if (index < 0 || index >= static_cast<int32_t>(state->nodes.size()) ||
          !usable(state->nodes[index]))
        return to_caf(not_found("no live node " + std::to_string(index)));
      return state->nodes[index].handle;
    },
    [=](experiments_atom, const std::string& session)
        -> caf::result<experiments::experiment_service> {
      ++state->requests;
      if (auto no = refuse<experiments::experiment_service>(self, *auth, session, role::client,
                                                            "the experiment store"))
        return *no;
      return service;
    },
    [=](hello_atom, const std::string& nonce) -> caf::result<head_hello> {
      auto h = auth->hello(nonce);
      if (!h)
        return to_caf(h.error());
      return *h;
    },
    [=](prove_atom, const std::string& what, const std::string& challenge,
        const identity_msg& proof) -> caf::result<std::string> {
      const caf::node_id peer = sender_node(self);
      auto checked = auth->prove(peer, what, challenge, proof);
      if (!checked) {
        report_refusal(self, peer, "cannot " + what + ": " + checked.error().message());
        return to_caf(checked.error());
      }
      std::fprintf(stderr, "dtrain head: process %s proved '%s' (%s)\n", caf::to_string(peer).c_str(),
                   checked->certificate.subject.c_str(), what == "join" ? "node" : "client");
      // Watched while the prover lives; when its connection goes first,
      // the down message says so and the proof goes.
      if (const auto& sender = self->current_sender(); sender && auth->watch(sender->address()))
        self->monitor(sender);
      return checked->token;
    },
  };
}

spawned_head spawn_head(caf::actor_system& sys, experiments::store_opener open_store,
                        std::string store_path, tls_identity tls) {
  auto auth = std::make_shared<head_auth>(std::move(tls), head_challenge_lifetime);
  std::string session = auth->local_session();
  return {sys.spawn(head_impl, std::move(open_store), std::move(store_path), std::move(auth)),
          std::move(session)};
}

} // namespace dtrain::actors
