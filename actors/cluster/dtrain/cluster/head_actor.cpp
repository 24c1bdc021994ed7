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
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

enum class node_state { alive, suspect, dead };

struct node_entry {
  node_info info;
  node_actor handle;
  caf::actor_addr addr;
  node_state state = node_state::alive;
  bool probing = false;            // a probe chain is under way
  int32_t cpu_used = 0;
  std::set<int32_t> gpus_held;     // device indices held by some replica
  int64_t rss_bytes = -1;          // its process's, as it last said (-1 not yet)
  std::chrono::steady_clock::time_point heard = std::chrono::steady_clock::now();  // last answer
  int64_t lost_at = 0;             // unix seconds it stopped being usable (0: usable)
  bool replaced = false;           // dead, and a node registered at its address since
};

// The most lost nodes a status lists (the newest): a cluster whose nodes
// come and go for weeks must not answer with all of them.
constexpr size_t max_lost_listed = 32;

/// What one trainer holds: CPU slots counted per node, GPUs by index.
struct holding {
  caf::actor_addr owner;
  std::map<int32_t, int32_t> cpu;                 // node -> slots
  std::vector<std::pair<int32_t, int32_t>> gpus;  // (node, device index)
};

/// A placement: a trainer id and the owner it was placed for. Ids are
/// meant to be unique (trainer.cpp), but the head does not take that on
/// trust: a trainer of another driver with the same id is another
/// placement, which neither a re-placement nor a release of this one frees.
using placement_key = std::pair<std::string, caf::actor_addr>;

struct head_state {
  std::vector<node_entry> nodes;
  std::map<placement_key, holding> trainers;
};

bool usable(const node_entry& n) { return n.state == node_state::alive; }

const char* state_name(node_state s) {
  switch (s) {
  case node_state::alive: return "alive";
  case node_state::suspect: return "suspect";
  case node_state::dead: return "dead";
  }
  return "unknown";
}

// Moves `n` to `to`, keeping when it was lost: the first time it stopped
// being usable (suspect, then dead, keeps the suspect time).
void set_state(node_entry& n, node_state to) {
  if (to == node_state::alive)
    n.lost_at = 0;
  else if (n.lost_at == 0)
    n.lost_at = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  n.state = to;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int32_t capacity(const node_entry& n, bool gpu) {
  return gpu ? static_cast<int32_t>(n.info.gpu_devices.size()) : n.info.cpu_slots;
}

int32_t in_use(const node_entry& n, bool gpu) {
  return gpu ? static_cast<int32_t>(n.gpus_held.size()) : n.cpu_used;
}

void release(head_state& s, const placement_key& trainer) {
  auto it = s.trainers.find(trainer);
  if (it == s.trainers.end())
    return;
  for (auto& [node, count] : it->second.cpu)
    s.nodes[node].cpu_used -= count;
  for (auto& [node, index] : it->second.gpus)
    s.nodes[node].gpus_held.erase(index);
  s.trainers.erase(it);
}

std::string describe_nodes(const head_state& s, bool gpu) {
  std::string out;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    auto& n = s.nodes[i];
    if (!usable(n))
      continue;
    out += (out.empty() ? "" : ", ") + std::string("node ") + std::to_string(i) + " (" +
           n.info.host + ") ";
    out += gpu && n.info.gpu_devices.empty()
               ? std::string("no GPUs")
               : std::to_string(capacity(n, gpu)) + (gpu ? " GPUs" : " slots") + ", " +
                     std::to_string(in_use(n, gpu)) + " in use";
  }
  return out.empty() ? "no live nodes" : out;
}

// What is missing when a request exceeds what the cluster has in all.
std::string too_large(const head_state& s, const std::string& trainer, int32_t n, bool gpu,
                      int64_t total) {
  std::string text = "trainer " + trainer + " needs " + std::to_string(n) + " " +
                     (gpu ? "GPUs" : "CPU slots") + " but the cluster has " +
                     std::to_string(total) + " in all (" + describe_nodes(s, gpu) + ")";
  if (gpu && total == 0)
    text += ": no node offers a GPU (a node built without CUDA, or started without --gpus, "
            "offers none)";
  return text;
}

// Takes up to `want` units on node `i` for `h`, appending the assignments
// (local ranks from `local`).
void take_on_node(head_state& s, size_t i, bool gpu, int32_t want, holding& h,
                  std::vector<assignment>& out, int32_t local = 0) {
  auto& node = s.nodes[i];
  const auto index = static_cast<int32_t>(i);
  if (!gpu) {
    int32_t n = std::min(want, node.info.cpu_slots - node.cpu_used);
    for (int32_t k = 0; k < n; ++k)
      out.push_back({index, node.info, local + k, -1});
    node.cpu_used += n;
    if (n > 0)
      h.cpu[index] += n;
    return;
  }
  int32_t taken = 0;
  for (int32_t device : node.info.gpu_devices) {
    if (taken == want)
      break;
    if (!node.gpus_held.insert(device).second)
      continue;  // another replica holds it
    out.push_back({index, node.info, local + taken++, device});
    h.gpus.emplace_back(index, device);
  }
}

caf::result<std::vector<assignment>> place(head_state& s, const std::string& trainer,
                                           int32_t n, bool gpu, const caf::actor& owner) {
  const char* unit = gpu ? "GPUs" : "CPU slots";
  if (n > max_replicas_per_placement)
    return to_caf(invalid_argument("trainer " + trainer + " asks for " + std::to_string(n) + " " +
                                   unit + ": at most " +
                                   std::to_string(max_replicas_per_placement) +
                                   " replicas are placed at once"));
  // 64-bit: each node's figures are bounded (check_registration), their
  // number is not.
  int64_t total = 0, free = 0;
  for (auto& node : s.nodes)
    if (usable(node)) {
      total += capacity(node, gpu);
      free += capacity(node, gpu) - in_use(node, gpu);
    }
  if (n > total)
    return to_caf(invalid_argument(too_large(s, trainer, n, gpu, total)));
  if (n > free) {
    std::string holders;
    for (auto& [key, h] : s.trainers)
      holders += (holders.empty() ? "" : ", ") + key.first;
    return to_caf(status(error_code::unavailable,
                         "waiting for " + std::to_string(n) + " " + unit + ": " +
                             std::to_string(free) + " free, the rest held by " + holders));
  }
  std::vector<assignment> out;
  holding& h = s.trainers[placement_key{trainer, owner.address()}];
  h.owner = owner.address();
  for (size_t i = 0; i < s.nodes.size() && static_cast<int32_t>(out.size()) < n; ++i)
    if (usable(s.nodes[i]))
      take_on_node(s, i, gpu, n - static_cast<int32_t>(out.size()), h, out);
  return out;
}

// Live recovery's re-placement (head_actor.hpp, resize): the trainer keeps
// `keep` (units it holds, on usable nodes), gives back the rest and gets
// `extra` more, all or nothing; a failure changes nothing.
caf::result<std::vector<assignment>> resize(head_state& s, const placement_key& key,
                                            const std::vector<assignment>& keep, int32_t extra,
                                            bool gpu, const caf::actor& owner) {
  auto it = s.trainers.find(key);
  if (it == s.trainers.end())
    return to_caf(not_found("trainer " + key.first + " holds no placement to resize"));
  const holding before = it->second;
  std::map<int32_t, int32_t> kept_cpu;
  std::map<int32_t, int32_t> next_local;  // per node: past the kept local ranks
  for (const assignment& a : keep) {
    const bool held = gpu ? std::count(before.gpus.begin(), before.gpus.end(),
                                       std::make_pair(a.node, a.gpu)) > 0
                          : before.cpu.count(a.node) && ++kept_cpu[a.node] <= before.cpu.at(a.node);
    if (!held || a.node < 0 || static_cast<size_t>(a.node) >= s.nodes.size())
      return to_caf(invalid_argument("trainer " + key.first + " keeps a unit on node " +
                                     std::to_string(a.node) + " that it does not hold"));
    if (!usable(s.nodes[a.node]))
      return to_caf(unavailable("trainer " + key.first + " keeps a unit on node " +
                                std::to_string(a.node) + ", which is no longer usable"));
    next_local[a.node] = std::max(next_local[a.node], a.local_rank + 1);
  }
  release(s, key);
  holding& h = s.trainers[key];
  h.owner = owner.address();
  std::vector<assignment> out;
  for (const assignment& a : keep) {
    if (gpu) {
      s.nodes[a.node].gpus_held.insert(a.gpu);
      h.gpus.emplace_back(a.node, a.gpu);
    } else {
      ++s.nodes[a.node].cpu_used;
      ++h.cpu[a.node];
    }
    out.push_back({a.node, s.nodes[a.node].info, a.local_rank, a.gpu});
  }
  int64_t free = 0;
  for (auto& node : s.nodes)
    if (usable(node))
      free += capacity(node, gpu) - in_use(node, gpu);
  if (extra > free) {
    release(s, key);  // back to what it held
    for (auto& [node, count] : before.cpu)
      s.nodes[node].cpu_used += count;
    for (auto& [node, index] : before.gpus)
      s.nodes[node].gpus_held.insert(index);
    s.trainers[key] = before;
    return to_caf(status(error_code::unavailable,
                         "trainer " + key.first + " asks for " + std::to_string(extra) +
                             " more " + (gpu ? "GPUs" : "CPU slots") + ": " +
                             std::to_string(free) + " free"));
  }
  const size_t wanted = keep.size() + static_cast<size_t>(extra);
  for (size_t i = 0; i < s.nodes.size() && out.size() < wanted; ++i)
    if (usable(s.nodes[i]))
      take_on_node(s, i, gpu, static_cast<int32_t>(wanted - out.size()), h, out,
                   next_local[static_cast<int32_t>(i)]);
  return out;
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
  if (st.lost.size() > max_lost_listed)  // in table order: the oldest first
    st.lost.erase(st.lost.begin(), st.lost.end() - static_cast<std::ptrdiff_t>(max_lost_listed));
  return st;
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

// Asks every usable node for its RSS (answers land in node_entry), then
// schedules the next round. Never blocks the head.
void poll_rss(head_actor::pointer self, const std::shared_ptr<head_state>& state) {
  for (size_t i = 0; i < state->nodes.size(); ++i) {
    if (!usable(state->nodes[i]))
      continue;
    self->request(state->nodes[i].handle, head_probe_timeout, rss_atom::value)
        .then(
            [=](int64_t bytes) {
              state->nodes[i].rss_bytes = bytes;
              state->nodes[i].heard = std::chrono::steady_clock::now();
            },
              [](caf::error&) {});  // a slow node keeps its last figure
  }
  self->delayed_send(self, head_rss_interval, rss_atom::value);
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
      // The session token, not the sender's node id (which a peer can
      // claim), shows that the registering process proved a node
      // certificate (head_auth::session).
      if (auto s = auth->allowed_session(session, sender_node(self), self->node(), role::node,
                                         "registering node " + info.host);
          !s) {
        report_refusal(self, sender_node(self), s.message());
        return to_caf(s);
      }
      if (auto s = check_registration(info); !s)
        return to_caf(s);
      // The node actor must live in the process that asks (the one that
      // proved a node certificate): else a node could enlist any actor of
      // any process, unproven, as a node, or register a null handle that
      // placement would hand to trainers.
      if (const caf::node_id peer = sender_node(self);
          !handle || (peer != handle.node() && !(peer == caf::node_id{} && handle.node() == self->node()))) {
        const std::string text =
            "registering node " + info.host + ": " +
            (handle ? "its node actor lives in process " + caf::to_string(handle.node()) +
                          ", not in the registering process " + caf::to_string(peer)
                    : std::string("no node actor given"));
        report_refusal(self, peer, text);
        return to_caf(invalid_argument(text));
      }
      self->monitor(handle);
      auth->watch(handle.address());  // its process's proof lives with it
      // A node back at the address of a dead one (restarted): the dead one
      // is no longer news.
      for (auto& old : state->nodes)
        if (old.state == node_state::dead && !info.address.empty() &&
            old.info.address == info.address)
          old.replaced = true;
      node_entry entry;
      entry.info = std::move(info);
      entry.handle = handle;
      entry.addr = handle.address();
      state->nodes.push_back(std::move(entry));
      return static_cast<int32_t>(state->nodes.size() - 1);
    },
    [=](place_atom, const std::string& trainer, int32_t n, bool gpu, caf::actor& owner,
        const std::string& session) -> caf::result<std::vector<assignment>> {
      if (auto no = refuse<std::vector<assignment>>(self, *auth, session, role::client,
                                                    "placing trainer " + trainer))
        return *no;
      if (n < 1)
        return to_caf(invalid_argument("a trainer needs at least one replica"));
      // A re-placement (restart) replaces the old placement: its own, the
      // one of this id and owner, never another driver's.
      const placement_key key{trainer, owner.address()};
      release(*state, key);
      auto placed = place(*state, trainer, n, gpu, owner);
      if (state->trainers.count(key) && owner) {
        self->monitor(owner);
        auth->watch(owner.address());  // its driver's proof lives with it
      }
      return placed;
    },
    [=](release_atom, const std::string& trainer, const caf::actor& owner,
        const std::string& session) -> caf::result<caf::ok_atom> {
      if (auto no = refuse<caf::ok_atom>(self, *auth, session, role::client,
                                         "releasing trainer " + trainer))
        return *no;
      release(*state, placement_key{trainer, owner.address()});
      return caf::ok_atom::value;
    },
    [=](resize_atom, const std::string& trainer, const std::vector<assignment>& keep,
        int32_t extra, bool gpu, const caf::actor& owner,
        const std::string& session) -> caf::result<std::vector<assignment>> {
      if (auto no = refuse<std::vector<assignment>>(self, *auth, session, role::client,
                                                    "resizing trainer " + trainer))
        return *no;
      if (extra < 0 || extra > max_replicas_per_placement)
        return to_caf(invalid_argument("resize: " + std::to_string(extra) + " more replicas"));
      return resize(*state, placement_key{trainer, owner.address()}, keep, extra, gpu, owner);
    },
    [=](unreach_atom, int32_t index, const std::string& session) -> caf::result<caf::ok_atom> {
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
        sweep_idle(self, auth);
      }
    },
    [=](status_atom, const std::string& session) -> caf::result<cluster_status> {
      if (auto no = refuse<cluster_status>(self, *auth, session, role::client,
                                           "the cluster's status"))
        return *no;
      return make_status(*state);
    },
    [=](caf::get_atom, int32_t index, const std::string& session) -> caf::result<node_actor> {
      if (auto no = refuse<node_actor>(self, *auth, session, role::client, "looking up a node"))
        return *no;
      if (index < 0 || index >= static_cast<int32_t>(state->nodes.size()) ||
          !usable(state->nodes[index]))
        return to_caf(not_found("no live node " + std::to_string(index)));
      return state->nodes[index].handle;
    },
    [=](experiments_atom, const std::string& session)
        -> caf::result<experiments::experiment_service> {
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
