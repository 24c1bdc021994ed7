#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "dtrain/api/config.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/cluster/system.hpp"
#include "dtrain/cluster/tls.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::actors {

/// A driver's connection to a cluster: its actor system, the head, and the
/// way to start replicas on nodes.
///
/// connect() with an address attaches to a running head (retrying until
/// connect_timeout); without one (and without $DTRAIN_ADDRESS) it starts an
/// embedded cluster in this process: a head and one node with local_slots
/// CPU slots, nothing to set up first. Destroying the cluster stops every
/// replica and actor this process hosts, then the actor system.
class cluster {
public:
  /// The public options (api/config.hpp), and what only this library's
  /// own callers set.
  struct options : dtrain::cluster_options {
    // `{address, slots, gpus, timeout}` leaves the rest at their defaults.
    options(std::string address_ = "", int local_slots_ = 0, int local_gpus_ = -1,
            std::chrono::milliseconds connect_timeout_ = std::chrono::milliseconds(10000)) {
      address = std::move(address_);
      local_slots = local_slots_;
      local_gpus = local_gpus_;
      connect_timeout = connect_timeout_;
    }
    explicit options(const dtrain::cluster_options& o) : dtrain::cluster_options(o) {}

    /// embedded: opens the store instead of the SQLite file at store_path
    /// (tests hand in a store of their own); store_path still names it.
    std::function<result<std::unique_ptr<experiments::experiment_store>>()> open_store;
  };

  static result<std::unique_ptr<cluster>> connect(const options& o);
  ~cluster();
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  caf::actor_system& system() { return *system_; }
  /// The head. When the one attached to went away (its process killed or
  /// restarted, a partition), a cluster that is not embedded first attaches
  /// again to the head at the same address (connect and, on TLS, the
  /// hello/prove exchange anew), waiting for it up to reattach_timeout;
  /// one that is not back by then leaves the old handle (whose requests
  /// time out, as they did before), and the next call tries again.
  head_actor head() const;
  bool embedded() const { return embedded_; }
  /// "embedded" or the head's address.
  const std::string& where() const { return where_; }

  /// The cluster's experiment store, kept by the head (the embedded head's
  /// file, or the store of the head this driver attached to), through an
  /// experiments::service_client made once and kept. Errors: the head does
  /// not answer. Store errors come from the store's calls. The client must
  /// not be used after the cluster is gone. Attached to a head by address,
  /// the store follows the head: each call goes to the service of the head
  /// that head() answers, so a head that went away and came back (its store
  /// reopened from disk) gets the calls made after it went.
  result<std::shared_ptr<experiments::experiment_store>> experiments();

  /// Starts one replica on the node of `a` through its node actor (node_of),
  /// with this process's credential for it (plugin_shipping.hpp:
  /// spawn_credential; none for an embedded cluster's own node). Errors
  /// name the replica and node, and the node's refusal.
  result<replica_actor> spawn_replica(const assignment& a, const replica_spec& spec,
                                      const caf::actor& owner, const rendezvous_actor& store,
                                      std::chrono::milliseconds timeout);

  /// The node actor of `a`'s node: this process's own in an embedded
  /// cluster, else the head's handle of it, reached over a direct
  /// connection to the node's address (so that large messages, such as
  /// plugins, do not pass through the head). Errors name the node.
  result<node_actor> node_of(const assignment& a, std::chrono::milliseconds timeout);

  /// This process's TLS identity (disabled on a plain cluster).
  const tls_identity& tls() const { return tls_; }
  /// This driver's TLS files when it speaks TLS, else none: what proves
  /// it as a client to a node (a log read's or a plugin's credential).
  security::tls_files client_files() const {
    return tls_.enabled() ? tls_.files : security::tls_files{};
  }

  /// The session token this process presents with every request to the
  /// head and its experiment service (head_actor.hpp): the one the head
  /// handed out when this driver proved its client certificate, or the
  /// embedded head's local one; "" on a plain cluster. Keep it in this
  /// process: whoever holds it acts as this driver.
  std::string session() const;

  /// How long head() waits for a head that went away to come back.
  static constexpr std::chrono::seconds reattach_timeout{30};

private:
  cluster() = default;
  status start_embedded(const options& o);
  status attach(const std::string& address, std::chrono::milliseconds timeout);
  result<node_actor> reach_node(const assignment& a, const std::string& what);
  void watch_head() const;
  void reattach_if_gone() const;

  tls_identity tls_;
  std::unique_ptr<system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  // The head and the session at it (session()), replaced by a reattach
  // (head()): guarded by head_mutex_.
  mutable std::mutex head_mutex_;
  mutable head_actor head_;
  mutable std::string session_;
  mutable std::shared_ptr<std::atomic<bool>> head_gone_;  // set when head_ goes down
  mutable caf::actor head_watch_;                         // monitors head_
  node_actor local_node_;
  bool embedded_ = false;
  std::string where_;
  std::string store_path_;  // embedded
  std::mutex experiments_mutex_;
  std::shared_ptr<experiments::experiment_store> experiments_;
  std::mutex nodes_mutex_;
  std::map<std::string, node_actor> nodes_;  // TLS: node actors reached, by "address pid"
};

} // namespace dtrain::actors
