#include "dtrain/dashboard/source.hpp"

#include <algorithm>
#include <mutex>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/node_logs.hpp"

namespace dtrain::dashboard {

namespace {

using namespace dtrain::actors;

class head_cluster_source final : public cluster_source {
public:
  head_cluster_source(caf::actor_system& sys, head_actor head, std::string session,
                      std::chrono::milliseconds timeout, security::tls_files log_client)
    : sys_(sys), head_(std::move(head)), session_(std::move(session)), timeout_(timeout),
      log_client_(std::move(log_client)) {}

  result<cluster_status> status() override {
    caf::scoped_actor self{sys_};
    return status_within(self, timeout_);
  }

  result<log_chunk> node_log(int32_t position, int64_t offset, int32_t max_bytes) override {
    using clock = std::chrono::steady_clock;
    const clock::time_point deadline = clock::now() + timeout_;
    auto left = [&] {
      return std::max(std::chrono::milliseconds(1),
                      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()));
    };
    caf::scoped_actor self{sys_};
    auto st = status_within(self, left());
    if (!st)
      return st.error();
    const int32_t count = static_cast<int32_t>(st->nodes.size());
    if (position < 0 || position >= count)
      return not_found("no node " + std::to_string(position) + ": the cluster has " +
                       std::to_string(count) + " live nodes");
    const node_info& info = st->nodes[position];
    const std::string label = "node " + std::to_string(position) + " (" + info.host + ", " +
                              (info.address.empty() ? "in-process" : info.address) + ")";
    const int32_t id =
        position < static_cast<int32_t>(st->node_ids.size()) ? st->node_ids[position] : position;
    // The head holds every node's actor (it is where they registered), so
    // it hands out the handle: nothing to connect to from here.
    result<node_actor> node = unavailable(label + ": the head did not answer");
    self->request(head_, left(), caf::get_atom::value, id, session_)
        .receive([&](node_actor& n) { node = std::move(n); },
                 [&](caf::error& e) { node = lost_or(e, label, count); });
    if (!node)
      return node.error();
    return read_log_chunk(self, log_source{*node, info, log_client_, label}, offset,
                          std::clamp(max_bytes, 0, max_log_chunk), left());
  }

  // The lock is not held while asking: a head that does not answer would
  // hold every other worker's call for the whole timeout. Two callers may
  // both ask; the first client made is kept.
  result<std::shared_ptr<experiments::experiment_store>> store() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (store_)
        return store_;
    }
    caf::scoped_actor self{sys_};
    result<std::shared_ptr<experiments::experiment_store>> out =
        unavailable("the head did not answer for its experiment store");
    self->request(head_, timeout_, experiments_atom::value, session_)
        .receive(
            [&](experiments::experiment_service& service) {
              auto made = std::make_shared<experiments::service_client>(
                  sys_, std::move(service), session_, "the head's experiment store", timeout_);
              std::lock_guard<std::mutex> lock(mutex_);
              if (!store_)
                store_ = std::move(made);
              out = store_;
            },
            [&](caf::error& e) {
              out = unavailable("the head's experiment store: " + caf::to_string(e));
            });
    return out;
  }

private:
  // The head's not_found names the node by its index in the head's table,
  // which the user never saw: said again with the position and label they
  // asked for. Other errors keep the head's words, after the label.
  static dtrain::status lost_or(const caf::error& e, const std::string& label, int32_t count) {
    dtrain::status s = from_caf(e, label + ": asking the head for it");
    if (s.code() == error_code::not_found)
      return not_found(label + " was lost after the cluster's status was read (it listed " +
                       std::to_string(count) + " live nodes); ask for the cluster again");
    return s;
  }

  result<cluster_status> status_within(caf::scoped_actor& self, std::chrono::milliseconds timeout) {
    result<cluster_status> out = unavailable("the head did not answer");
    self->request(head_, timeout, status_atom::value, session_)
        .receive([&](cluster_status& s) { out = std::move(s); },
                 [&](caf::error& e) { out = unavailable("the head: " + caf::to_string(e)); });
    return out;
  }

  caf::actor_system& sys_;
  head_actor head_;
  std::string session_;  // this process's token at the head
  std::chrono::milliseconds timeout_;
  security::tls_files log_client_;
  std::mutex mutex_;  // guards store_
  std::shared_ptr<experiments::experiment_store> store_;
};

} // namespace

std::unique_ptr<cluster_source> head_source(caf::actor_system& sys, head_actor head,
                                            std::string session,
                                            std::chrono::milliseconds timeout,
                                            security::tls_files log_client) {
  return std::make_unique<head_cluster_source>(sys, std::move(head), std::move(session), timeout,
                                               std::move(log_client));
}

} // namespace dtrain::dashboard
