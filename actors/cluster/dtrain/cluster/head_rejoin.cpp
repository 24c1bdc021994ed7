// Taking nodes back: a node that returns after a partition, and the nodes
// of a head restarted at the same address, which report what they host
// (head_table.hpp).
#include "dtrain/cluster/head_table.hpp"

#include <algorithm>

namespace dtrain::actors::head_detail {

namespace {

// Whether `old` is the entry of the node actor `handle` (the same actor of
// the same process, reached over a new connection): a process may host
// more than one node actor (an embedded cluster, tests), so the process
// alone does not say. A placeholder, with no handle, is nobody's.
bool same_node(const node_entry& old, const node_actor& handle) {
  return old.handle && old.handle.node() == handle.node() && old.handle.id() == handle.id();
}

// A slot of the table that holds no node (padding up to a returning
// node's earlier index).
bool placeholder(const node_entry& n) { return !n.handle && n.state == node_state::dead; }

// Removes node `index`'s share of the placements rebuilt from reports.
void drop_reported_share(head_state& s, int32_t index) {
  auto& node = s.nodes[index];
  for (auto& [key, h] : s.trainers) {
    if (!h.reported)
      continue;
    if (auto it = h.cpu.find(index); it != h.cpu.end()) {
      node.cpu_used -= it->second;
      h.cpu.erase(it);
    }
    for (auto it = h.gpus.begin(); it != h.gpus.end();) {
      if (it->first != index) {
        ++it;
        continue;
      }
      node.gpus_held.erase(it->second);
      it = h.gpus.erase(it);
    }
  }
}

} // namespace

void set_state(node_entry& n, node_state to) {
  if (to == node_state::alive)
    n.lost_at = 0;
  else if (n.lost_at == 0)
    n.lost_at = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  n.state = to;
}

int32_t admit_node(head_state& s, node_info info, const node_actor& handle, int32_t previous) {
  int32_t index = -1;
  for (size_t i = 0; i < s.nodes.size() && index < 0; ++i)
    if (same_node(s.nodes[i], handle))
      index = static_cast<int32_t>(i);
  const auto size = static_cast<int32_t>(s.nodes.size());
  // The earlier index only within reach: a forged one must not grow the
  // table without bound.
  if (index < 0 && previous >= 0 && previous < size + max_placeholders &&
      (previous >= size || placeholder(s.nodes[previous])))
    index = previous;
  if (index < 0)
    index = size;
  while (static_cast<int32_t>(s.nodes.size()) <= index) {
    node_entry pad;
    pad.state = node_state::dead;
    pad.replaced = true;  // never listed as lost
    s.nodes.push_back(std::move(pad));
  }
  node_entry& entry = s.nodes[index];
  entry.info = std::move(info);
  entry.handle = handle;
  entry.addr = handle.address();
  entry.replaced = false;
  entry.probing = false;
  entry.heard = std::chrono::steady_clock::now();
  set_state(entry, node_state::alive);
  return index;
}

std::vector<caf::actor> count_hosted(head_state& s, int32_t index,
                                     const std::vector<hosted_replica>& hosted) {
  std::vector<caf::actor> watch;
  drop_reported_share(s, index);
  auto& node = s.nodes[index];
  for (const auto& r : hosted) {
    if (!r.owner)
      continue;  // nobody to give it back: the replica ends with its owner anyway
    const placement_key key{r.trainer, r.owner.address()};
    auto it = s.trainers.find(key);
    if (it != s.trainers.end() && !it->second.reported)
      continue;  // placed by this head: counted already
    if (it == s.trainers.end()) {
      it = s.trainers.emplace(key, holding{}).first;
      it->second.owner = r.owner.address();
      it->second.reported = true;
      watch.push_back(r.owner);
    }
    holding& h = it->second;
    const auto& offered = node.info.gpu_devices;
    if (r.gpu >= 0) {
      if (std::find(offered.begin(), offered.end(), r.gpu) != offered.end() &&
          node.gpus_held.insert(r.gpu).second)
        h.gpus.emplace_back(index, r.gpu);
    } else if (node.cpu_used < node.info.cpu_slots) {
      ++node.cpu_used;
      ++h.cpu[index];
    }
  }
  return watch;
}

} // namespace dtrain::actors::head_detail
