// The head's placement (head_actor.hpp): gang placement of a trainer's
// replicas, a placement given back, and live recovery's resize (keep some
// units, add more).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/head_table.hpp"

namespace dtrain::actors::head_detail {

namespace {

int32_t capacity(const node_entry& n, bool gpu) {
  return gpu ? static_cast<int32_t>(n.info.gpu_devices.size()) : n.info.cpu_slots;
}

int32_t in_use(const node_entry& n, bool gpu) {
  return gpu ? static_cast<int32_t>(n.gpus_held.size()) : n.cpu_used;
}

// A refusal names at most this many nodes or holders: on a cluster of
// thousands the message would otherwise grow with it, and a trainer
// waiting for capacity gets one every half second.
constexpr size_t max_named = 8;

// Appends `item` to the comma-separated `list` while it names fewer than
// max_named; counts the rest in `more`.
void name_some(std::string& list, size_t& named, size_t& more, const std::string& item) {
  if (named++ < max_named)
    list += (list.empty() ? "" : ", ") + item;
  else
    ++more;
}

std::string and_more(size_t more, const char* what) {
  return more == 0 ? "" : " and " + std::to_string(more) + " more " + what;
}

std::string describe_nodes(const head_state& s, bool gpu) {
  std::string out;
  size_t named = 0, more = 0;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    auto& n = s.nodes[i];
    if (!usable(n))
      continue;
    name_some(out, named, more,
              "node " + std::to_string(i) + " (" + n.info.host + ") " +
                  (gpu && n.info.gpu_devices.empty()
                       ? std::string("no GPUs")
                       : std::to_string(capacity(n, gpu)) + (gpu ? " GPUs" : " slots") + ", " +
                             std::to_string(in_use(n, gpu)) + " in use"));
  }
  return out.empty() ? "no live nodes" : out + and_more(more, "nodes");
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

} // namespace

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
    size_t named = 0, more = 0;
    for (auto& [key, h] : s.trainers)
      name_some(holders, named, more, key.first);
    return to_caf(status(error_code::unavailable,
                         "waiting for " + std::to_string(n) + " " + unit + ": " +
                             std::to_string(free) + " free, the rest held by " + holders +
                             and_more(more, "trainers")));
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

} // namespace dtrain::actors::head_detail
