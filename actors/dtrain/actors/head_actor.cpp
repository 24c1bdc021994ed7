#include "dtrain/actors/head_actor.hpp"

#include <map>

#include "dtrain/actors/errors.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

struct node_entry {
  node_info info;
  node_actor handle;
  caf::actor_addr addr;
  int32_t used = 0;
  bool alive = true;
};

struct holding {
  caf::actor_addr owner;
  std::map<int32_t, int32_t> slots;  // node -> count
};

struct head_state {
  std::vector<node_entry> nodes;
  std::map<std::string, holding> trainers;
};

int32_t capacity(const node_entry& n, bool gpu) { return gpu ? n.info.gpus : n.info.cpu_slots; }

void release(head_state& s, const std::string& trainer) {
  auto it = s.trainers.find(trainer);
  if (it == s.trainers.end())
    return;
  for (auto& [node, count] : it->second.slots)
    s.nodes[node].used -= count;
  s.trainers.erase(it);
}

std::string describe_nodes(const head_state& s, bool gpu) {
  std::string out;
  for (size_t i = 0; i < s.nodes.size(); ++i)
    if (s.nodes[i].alive)
      out += (out.empty() ? "" : ", ") + std::string("node ") + std::to_string(i) + " (" +
             s.nodes[i].info.host + ") " + std::to_string(capacity(s.nodes[i], gpu)) +
             (gpu ? " GPUs" : " slots") + ", " + std::to_string(s.nodes[i].used) + " in use";
  return out.empty() ? "no nodes" : out;
}

caf::result<std::vector<assignment>> place(head_state& s, const std::string& trainer,
                                           int32_t n, bool gpu, const caf::actor& owner) {
  const char* unit = gpu ? "GPUs" : "CPU slots";
  int32_t total = 0, free = 0;
  for (auto& node : s.nodes)
    if (node.alive) {
      total += capacity(node, gpu);
      free += capacity(node, gpu) - node.used;
    }
  if (n > total)
    return to_caf(invalid_argument("trainer " + trainer + " needs " + std::to_string(n) + " " +
                                   unit + " but the cluster has " + std::to_string(total) +
                                   " in all (" + describe_nodes(s, gpu) + ")"));
  if (n > free) {
    std::string holders;
    for (auto& [id, h] : s.trainers)
      holders += (holders.empty() ? "" : ", ") + id;
    return to_caf(status(error_code::unavailable,
                         "waiting for " + std::to_string(n) + " " + unit + ": " +
                             std::to_string(free) + " free, the rest held by " + holders));
  }
  std::vector<assignment> out;
  holding& h = s.trainers[trainer];
  h.owner = owner.address();
  for (size_t i = 0; i < s.nodes.size() && static_cast<int32_t>(out.size()) < n; ++i) {
    auto& node = s.nodes[i];
    int32_t local = 0;
    while (node.alive && node.used < capacity(node, gpu) && static_cast<int32_t>(out.size()) < n) {
      out.push_back({static_cast<int32_t>(i), node.info, local, gpu ? node.used : -1});
      ++node.used;
      ++local;
      ++h.slots[static_cast<int32_t>(i)];
    }
  }
  return out;
}

} // namespace

head_actor::behavior_type head_impl(head_actor::pointer self) {
  auto state = std::make_shared<head_state>();
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto& node : state->nodes)
      if (node.addr == dm.source)
        node.alive = false;
    std::vector<std::string> gone;
    for (auto& [id, h] : state->trainers)
      if (h.owner == dm.source)
        gone.push_back(id);
    for (auto& id : gone)
      release(*state, id);
  });
  return {
    [=](register_atom, node_info& info, node_actor& handle) -> caf::result<int32_t> {
      self->monitor(handle);
      state->nodes.push_back({std::move(info), handle, handle.address(), 0, true});
      return static_cast<int32_t>(state->nodes.size() - 1);
    },
    [=](place_atom, const std::string& trainer, int32_t n, bool gpu,
        caf::actor& owner) -> caf::result<std::vector<assignment>> {
      if (n < 1)
        return to_caf(invalid_argument("a trainer needs at least one replica"));
      release(*state, trainer);  // a re-placement (restart) replaces the old one
      auto placed = place(*state, trainer, n, gpu, owner);
      if (state->trainers.count(trainer) && owner)
        self->monitor(owner);
      return placed;
    },
    [=](release_atom, const std::string& trainer) -> caf::result<caf::ok_atom> {
      release(*state, trainer);
      return caf::ok_atom::value;
    },
    [=](unreach_atom, int32_t index) -> caf::result<caf::ok_atom> {
      // A trainer could not reach this node: stop placing on it (its own
      // connection to the head may not have noticed yet).
      if (index >= 0 && index < static_cast<int32_t>(state->nodes.size()))
        state->nodes[index].alive = false;
      return caf::ok_atom::value;
    },
    [=](status_atom) -> caf::result<cluster_status> {
      cluster_status st;
      for (auto& node : state->nodes)
        if (node.alive) {
          st.nodes.push_back(node.info);
          st.slots_used.push_back(node.used);
        }
      for (auto& [id, h] : state->trainers) {
        int32_t count = 0;
        for (auto& [node, c] : h.slots)
          count += c;
        st.trainers.push_back(id + ": " + std::to_string(count) + " replicas");
      }
      return st;
    },
    [=](caf::get_atom, int32_t index) -> caf::result<node_actor> {
      if (index < 0 || index >= static_cast<int32_t>(state->nodes.size()) ||
          !state->nodes[index].alive)
        return to_caf(not_found("no live node " + std::to_string(index)));
      return state->nodes[index].handle;
    },
  };
}

head_actor spawn_head(caf::actor_system& sys) { return sys.spawn(head_impl); }

} // namespace dtrain::actors
