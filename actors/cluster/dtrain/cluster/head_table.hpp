#pragma once

// The head's tables (head_actor.cpp), shared with the code that takes
// nodes back (head_rejoin.cpp). Internal to the head: no other part of
// dtrain includes this.

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"

namespace dtrain::actors::head_detail {

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

/// What one trainer holds: CPU slots counted per node, GPUs by index.
struct holding {
  caf::actor_addr owner;
  std::map<int32_t, int32_t> cpu;                 // node -> slots
  std::vector<std::pair<int32_t, int32_t>> gpus;  // (node, device index)
  /// Rebuilt from what nodes reported (head_rejoin.cpp) rather than placed
  /// by this head: each node's report replaces that node's share.
  bool reported = false;
};

/// A placement: a trainer id and the owner it was placed for. Ids are
/// meant to be unique (trainer.cpp), but the head does not take that on
/// trust: a trainer of another driver with the same id is another
/// placement, which neither a re-placement nor a release of this one frees.
using placement_key = std::pair<std::string, caf::actor_addr>;

/// How many of the last placements' handler times the head keeps
/// (head_load: their median and 99th percentile).
constexpr size_t placement_window = 1024;

struct head_state {
  std::vector<node_entry> nodes;
  std::map<placement_key, holding> trainers;
  int64_t node_polls = 0;        // head_load
  int64_t requests = 0;
  std::vector<double> place_ms;  // a ring of placement_window handler times
  size_t place_next = 0;
  size_t poll_next = 0;          // the RSS rounds' turn: the next table index to ask
  int64_t poll_ticks = 0;        // slices so far
  int64_t slices_per_round = 1;  // the last slice's rhythm
};

/// Whether all `usable` nodes may be asked at once every head_rss_interval
/// within head_polls_per_second (head_actor.hpp).
bool polls_fit_one_slice(int64_t usable);
/// How many nodes one RSS slice asks when `usable` nodes are: all of them
/// while they fit one slice, else head_polls_per_second's share of one
/// head_poll_tick.
int32_t poll_share(int64_t usable);

/// How far past the end of the table a returning node's earlier index may
/// lie (head_rejoin.cpp pads the table up to it).
constexpr int32_t max_placeholders = 1024;

inline bool usable(const node_entry& n) { return n.state == node_state::alive; }

/// Moves `n` to `to`, keeping when it was lost: the first time it stopped
/// being usable (suspect, then dead, keeps the suspect time).
void set_state(node_entry& n, node_state to);

/// Where a registering node goes in the table (head_rejoin.cpp): the entry
/// of the same node actor (same process and actor id) when the head has
/// one, in whatever state
/// (a node back after a partition: counted once, its slots in use kept);
/// else `previous` (the index it had before, -1 none) when that entry is
/// free (past the end of the table, which is padded with unusable
/// placeholders, or a placeholder); else a new entry at the end. The entry
/// is alive afterwards, with `info` and `handle`. Returns its index.
int32_t admit_node(head_state& s, node_info info, const node_actor& handle, int32_t previous);

/// Counts what node `index` reports it hosts (a head restarted, or a node
/// back): each replica's unit is taken again on that node and added to
/// its placement, (trainer, owner), created when the head does not know
/// it; a placement this head made itself is left as it is (it counts its
/// units already). A report replaces that node's earlier share of the
/// placements rebuilt from reports. Returns the owners of the placements
/// it created, for the head to monitor.
std::vector<caf::actor> count_hosted(head_state& s, int32_t index,
                                     const std::vector<hosted_replica>& hosted);

/// Gives back everything `trainer` holds (nothing when it holds nothing).
void release(head_state& s, const placement_key& trainer);
/// Places n units all or nothing (head_actor.hpp, place), filling one
/// node before the next; errors say what is missing or who holds it.
caf::result<std::vector<assignment>> place(head_state& s, const std::string& trainer,
                                           int32_t n, bool gpu, const caf::actor& owner);
/// Live recovery's re-placement (head_actor.hpp, resize): the trainer
/// keeps `keep` (units it holds, on usable nodes), gives back the rest and
/// gets `extra` more, all or nothing; a failure changes nothing.
caf::result<std::vector<assignment>> resize(head_state& s, const placement_key& key,
                                            const std::vector<assignment>& keep, int32_t extra,
                                            bool gpu, const caf::actor& owner);

} // namespace dtrain::actors::head_detail
