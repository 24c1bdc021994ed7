#include "dtrain/dashboard/source.hpp"

#include <mutex>

#include "dtrain/actors/experiments/client.hpp"

namespace dtrain::dashboard {

namespace {

using namespace dtrain::actors;

class head_cluster_source final : public cluster_source {
public:
  head_cluster_source(caf::actor_system& sys, head_actor head, std::chrono::milliseconds timeout)
    : sys_(sys), head_(std::move(head)), timeout_(timeout) {}

  result<cluster_status> status() override {
    caf::scoped_actor self{sys_};
    result<cluster_status> out = unavailable("the head did not answer");
    self->request(head_, timeout_, status_atom::value)
        .receive([&](cluster_status& s) { out = std::move(s); },
                 [&](caf::error& e) { out = unavailable("the head: " + caf::to_string(e)); });
    return out;
  }

  // The lock is not held while asking: a head that does not answer would
  // hold every other worker's call for the whole timeout. Two callers may
  // both ask; the first client made is kept.
  result<std::shared_ptr<store::experiment_store>> store() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (store_)
        return store_;
    }
    caf::scoped_actor self{sys_};
    result<std::shared_ptr<store::experiment_store>> out =
        unavailable("the head did not answer for its experiment store");
    self->request(head_, timeout_, experiments_atom::value)
        .receive(
            [&](experiments::experiment_service& service) {
              auto made = std::make_shared<experiments::service_client>(
                  sys_, std::move(service), "the head's experiment store", timeout_);
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
  caf::actor_system& sys_;
  head_actor head_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // guards store_
  std::shared_ptr<store::experiment_store> store_;
};

} // namespace

std::unique_ptr<cluster_source> head_source(caf::actor_system& sys, head_actor head,
                                            std::chrono::milliseconds timeout) {
  return std::make_unique<head_cluster_source>(sys, std::move(head), timeout);
}

} // namespace dtrain::dashboard
