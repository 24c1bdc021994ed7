#pragma once

// The scale harness's view of a head: status, placements and releases as
// a driver makes them (the head's own messages, through CAF), each timed
// from here.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/cluster/system.hpp"

namespace dtrain::bench::scale {

using clock = std::chrono::steady_clock;

inline double ms_since(clock::time_point t) {
  return std::chrono::duration<double, std::milli>(clock::now() - t).count();
}

/// Requests to one head from `sys` (plain remoting: the harness runs on
/// loopback), on behalf of `owner`, an actor of this process that lives as
/// long as the client (the head gives a placement back when its owner goes).
class head_client {
public:
  head_client(caf::actor_system& sys, actors::head_actor head, std::string session = "")
      : sys_(sys), head_(std::move(head)), session_(std::move(session)),
        owner_(sys.spawn([] { return caf::behavior{[](int32_t) {}}; })) {}
  ~head_client() { caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown); }

  result<actors::cluster_status> status(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    caf::scoped_actor self{sys_};
    result<actors::cluster_status> out{unavailable("no answer")};
    self->request(head_, timeout, actors::status_atom::value, session_)
        .receive([&](actors::cluster_status& s) { out = std::move(s); },
                 [&](caf::error& e) { out = actors::from_caf(e, "status"); });
    return out;
  }

  /// Places `trainer` with n CPU slots; the assignments or the head's error.
  result<std::vector<actors::assignment>> place(const std::string& trainer, int32_t n) {
    caf::scoped_actor self{sys_};
    result<std::vector<actors::assignment>> out{unavailable("no answer")};
    self->request(head_, std::chrono::seconds(10), actors::place_atom::value, trainer, n, false,
                  owner_, session_)
        .receive([&](std::vector<actors::assignment>& a) { out = std::move(a); },
                 [&](caf::error& e) { out = actors::from_caf(e, "placing " + trainer); });
    return out;
  }

  dtrain::status release(const std::string& trainer) {
    caf::scoped_actor self{sys_};
    dtrain::status out = unavailable("no answer");
    self->request(head_, std::chrono::seconds(10), actors::release_atom::value, trainer, owner_,
                  session_)
        .receive([&](caf::ok_atom) { out = dtrain::status::ok(); },
                 [&](caf::error& e) { out = actors::from_caf(e, "releasing " + trainer); });
    return out;
  }

  /// Polls status every `period` until `done` holds for it or `timeout`;
  /// the milliseconds it took, or -1 at the timeout.
  template <class Done>
  double wait_until(Done done, std::chrono::milliseconds timeout,
                    std::chrono::milliseconds period = std::chrono::milliseconds(10)) {
    const auto start = clock::now();
    while (clock::now() - start < timeout) {
      auto s = status(std::chrono::seconds(2));
      if (s && done(*s))
        return ms_since(start);
      std::this_thread::sleep_for(period);
    }
    return -1;
  }

private:
  caf::actor_system& sys_;
  actors::head_actor head_;
  std::string session_;
  caf::actor owner_;
};

/// A head_client of its own actor system, attached to the head at
/// `address` (plain remoting, 10 s to reach it); nullptr, said on stderr,
/// when the head cannot be reached.
class attached_client {
public:
  static std::unique_ptr<attached_client> attach(const std::string& address) {
    auto a = std::unique_ptr<attached_client>(new attached_client);
    auto head = actors::connect_head(a->sys_, address, std::chrono::seconds(10), {}, {});
    if (!head) {
      std::fprintf(stderr, "error: %s\n", head.error().message().c_str());
      return nullptr;
    }
    a->client_ = std::make_unique<head_client>(a->sys_, *head);
    return a;
  }
  ~attached_client() { client_.reset(); }  // before the actor system
  head_client& client() { return *client_; }
  caf::actor_system& system() { return sys_; }

private:
  attached_client() = default;
  actors::system_config cfg_;
  caf::actor_system sys_{cfg_};
  std::unique_ptr<head_client> client_;
};

/// The p-th quantile (0..1) of `v` (nearest rank); 0 for none.
inline double quantile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

} // namespace dtrain::bench::scale
