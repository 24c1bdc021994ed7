#include "dtrain/cluster/node_actor.hpp"

#include "dtrain/core/memory.hpp"
#include "dtrain/core/utf8.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <fstream>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/cluster/replica_actor.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "dtrain/plugin/loader.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::actors {

/// A node's own bookkeeping: the challenges handed out and not yet used.
struct node_state {
  using clock = std::chrono::steady_clock;
  node_options options;
  std::deque<std::pair<std::string, clock::time_point>> challenges;  // oldest first; bounded
};

namespace {

constexpr size_t max_open_challenges = 64;
// Writing and loading a library of up to 256 MiB.
constexpr std::chrono::seconds install_timeout{120};

// "<what> refused: the driver could not prove it runs as the node's user":
// same_user_refusal for plugins.
std::string same_user_refusal_for(const std::string& what) {
  return what + " refused: the driver could not prove it runs as the node's user";
}

// Uses up `challenge`: it must have been handed out by this node less than
// plugin_challenge_lifetime ago and not used yet. Single use: consumed
// whether or not the credential then holds.
status take_challenge(node_state& st, const std::string& challenge, const std::string& what) {
  const auto now = node_state::clock::now();
  auto& open = st.challenges;
  while (!open.empty() && now - open.front().second > plugin_challenge_lifetime)
    open.pop_front();
  auto it = std::find_if(open.begin(), open.end(),
                         [&](const auto& c) { return c.first == challenge; });
  if (challenge.empty() || it == open.end())
    return invalid_argument(what + " refused: the challenge of its credential was not handed "
                            "out by this node, was used already or is older than " +
                            std::to_string(plugin_challenge_lifetime.count()) + " s");
  open.erase(it);
  return status::ok();
}

// What a request that runs code on this node or reads its log must present
// (node_actor.hpp): `what` ("plugin", "replica", "log read") for messages, `subject` for same-user MACs,
// `purpose` for identity proofs.
struct code_request {
  std::string what, subject, purpose;
};

// A same-user credential: a MAC keyed by this node's secret over the
// challenge, the request and this node process (node_secret.hpp).
status check_same_user(const node_state& st, const code_request& r, const plugin_credential& c,
                       const std::string& node_id) {
  const std::string expected =
      plugin_mac(st.options.secret, plugin_mac_message(c.challenge, r.subject, st.options.identity,
                                                       st.options.secret_file, node_id));
  if (!security::constant_time_equal(c.signature, expected))
    return invalid_argument(same_user_refusal_for(r.what) +
                            " (its MAC does not hold for this node, request and challenge)");
  return status::ok();
}

// Whether the driver may run `r` on this node (node_actor.hpp); `node_id` is
// this process's CAF node id. A node with neither a secret nor a CA (an
// embedded cluster's, reachable only in its own process) asks nothing.
status check_credential(node_state& st, const code_request& r, const plugin_credential& c,
                        const std::string& node_id) {
  if (st.options.secret.empty() && st.options.ca_file.empty() && c.kind.empty())
    return status::ok();
  if (c.kind != "same-user" && c.kind != "identity-proof")
    return invalid_argument(r.what + " refused: unknown credential kind '" + c.kind + "'");
  if (c.kind == "same-user" && st.options.secret.empty())
    return invalid_argument(same_user_refusal_for(r.what) +
                            " (this node accepts no same-user credential)");
  DTRAIN_RETURN_IF_ERROR(take_challenge(st, c.challenge, r.what));
  if (c.kind == "same-user")
    return check_same_user(st, r, c, node_id);
  if (st.options.ca_file.empty())
    return invalid_argument(r.what + " refused: this node runs without TLS and accepts no "
                            "identity proof (drivers of a plain cluster present a same-user "
                            "credential)");
  auto who = security::check_identity({c.certificate_pem, c.signature}, r.purpose, c.challenge,
                                      st.options.ca_file, {security::role::client});
  if (!who)
    return invalid_argument(r.what + " refused: the driver's identity proof does not hold: " +
                            who.error().message());
  return status::ok();
}

// check_credential, and a refusal said on the node's stderr too.
status authorize(node_state& st, const code_request& r, const plugin_credential& c,
                 const std::string& node_id) {
  status allowed = check_credential(st, r, c, node_id);
  if (!allowed)
    std::fprintf(stderr, "dtrain node: %s\n", allowed.message().c_str());
  return allowed;
}

// Installs on a detached thread of its own (file I/O and dlopen block) and
// answers the operators.
void install_worker(caf::blocking_actor* self, std::string dir) {
  self->receive([&](const std::string& hash,
                    const std::vector<char>& bytes) -> caf::result<std::vector<std::string>> {
    auto p = plugin::install_plugin(dir, hash, bytes);
    if (!p)
      return to_caf(p.error());
    std::printf("dtrain node: installed plugin %s (%s) with operators", hash.c_str(),
                p->path.c_str());
    for (const auto& op : p->operators)
      std::printf(" %s", op.c_str());
    std::printf("\n");
    std::fflush(stdout);
    return p->operators;
  });
}

// Up to `max_bytes` of `path` from `offset` (negative: from the end).
result<log_chunk> read_log(const std::string& path, int64_t offset, int32_t max_bytes) {
  if (path.empty())
    return not_found("this node keeps no log file (a node in a driver's own process writes to "
                     "the driver's output)");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return io_error("cannot read the node's log file " + path);
  log_chunk out;
  out.path = path;
  out.size = static_cast<int64_t>(in.tellg());
  const int64_t want = std::clamp<int64_t>(max_bytes, 0, max_log_chunk);
  out.offset = offset < 0 ? std::max<int64_t>(0, out.size + offset) : std::min(offset, out.size);
  const int64_t n = std::min(want, out.size - out.offset);
  out.bytes.resize(static_cast<size_t>(n));
  in.seekg(out.offset);
  in.read(out.bytes.data(), n);
  out.bytes.resize(static_cast<size_t>(in.gcount()));
  // Cut short of the end: the chunk ends before a character it would cut,
  // which the next chunk begins with. Kept as read when it holds nothing
  // else (max_bytes under 4), so that a reader still moves on.
  if (out.offset + static_cast<int64_t>(out.bytes.size()) < out.size) {
    const size_t whole = utf8::complete_prefix_length(out.bytes);
    if (whole > 0)
      out.bytes.resize(whole);
  }
  out.next = out.offset + static_cast<int64_t>(out.bytes.size());
  return out;
}

} // namespace

void hosted_table::add(const caf::actor_addr& front, hosted_replica r) {
  std::lock_guard<std::mutex> lock(mutex_);
  replicas_[front] = std::move(r);
}

void hosted_table::remove(const caf::actor_addr& front) {
  std::lock_guard<std::mutex> lock(mutex_);
  replicas_.erase(front);
}

std::vector<hosted_replica> hosted_table::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<hosted_replica> out;
  for (const auto& [front, r] : replicas_)
    out.push_back(r);
  return out;
}

std::string node_proof_name(const std::string& host_id, int32_t pid) {
  return host_id + "/" + std::to_string(pid);
}

std::string plugin_proof_purpose(const std::string& hash, const std::string& node_name) {
  return "plugin " + hash + " " + node_name;
}

std::string spawn_subject(const replica_spec& spec) {
  const std::string text = caf::deep_to_string(spec);
  return "spawn:" + security::sha256_hex(text.data(), text.size());
}

std::string spawn_proof_purpose(const replica_spec& spec, const std::string& node_name) {
  return "replica " + spawn_subject(spec) + " " + node_name;
}

std::string log_subject(int64_t offset, int32_t max_bytes) {
  return "log:" + std::to_string(offset) + ":" + std::to_string(max_bytes);
}

std::string log_proof_purpose(int64_t offset, int32_t max_bytes, const std::string& node_name) {
  return "log " + log_subject(offset, max_bytes) + " " + node_name;
}

node_actor::behavior_type node_impl(node_actor::stateful_pointer<node_state> self,
                                    node_options options) {
  self->state.options = std::move(options);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (self->state.options.hosted)
      self->state.options.hosted->remove(dm.source);
  });
  return {
    [=](spawn_atom, replica_spec& spec, caf::actor& owner, rendezvous_actor& store,
        const plugin_credential& credential) -> caf::result<replica_actor> {
      const code_request r{"replica", spawn_subject(spec),
                           spawn_proof_purpose(spec, self->state.options.identity)};
      if (status allowed = authorize(self->state, r, credential, caf::to_string(self->node()));
          !allowed)
        return to_caf(allowed);
      if (spec.capability.size() < min_capability_chars)
        return to_caf(invalid_argument(
            "replica refused: its spec carries a capability of " +
            std::to_string(spec.capability.size()) + " characters, under the " +
            std::to_string(min_capability_chars) + " it needs (the replica would answer anyone)"));
      hosted_replica record{spec.trainer, owner, spec.gpu};
      auto front = self->system().spawn(replica_front, std::move(spec), std::move(owner),
                                        std::move(store));
      if (self->state.options.hosted) {
        self->state.options.hosted->add(front.address(), std::move(record));
        self->monitor(front);  // its end takes it off the record (down handler)
      }
      return front;
    },
    [=](status_atom) -> caf::result<int32_t> { return hosted_replica_count(); },
    [=](rss_atom) -> caf::result<int64_t> {
      auto rss = resident_memory_bytes();
      return rss ? *rss : int64_t{-1};
    },
    [=](plugin_atom, const std::string& hash) -> caf::result<std::vector<std::string>> {
      auto p = plugin::find_plugin(hash);
      if (!p)
        return to_caf(p.error());
      return p->operators;
    },
    [=](plugin_atom, const std::string& hash, std::vector<char>& bytes,
        const plugin_credential& credential) -> caf::result<std::vector<std::string>> {
      const code_request r{"plugin", hash, plugin_proof_purpose(hash, self->state.options.identity)};
      if (status allowed = authorize(self->state, r, credential, caf::to_string(self->node()));
          !allowed)
        return to_caf(allowed);
      // The sender checks the size too; a node does not take its word.
      if (bytes.size() > max_plugin_bytes) {
        status big = invalid_argument("plugin " + hash + " refused: " +
                                      std::to_string(bytes.size() >> 20) + " MiB, over the " +
                                      std::to_string(max_plugin_bytes >> 20) + " MiB limit");
        std::fprintf(stderr, "dtrain node: %s\n", big.message().c_str());
        return to_caf(big);
      }
      auto promise = self->make_response_promise<std::vector<std::string>>();
      auto worker = self->spawn<caf::detached>(install_worker, self->state.options.plugin_dir);
      self->request(worker, install_timeout, hash, std::move(bytes))
          .then([=](std::vector<std::string>& operators) mutable { promise.deliver(operators); },
                [=](caf::error& e) mutable {
                  std::fprintf(stderr, "dtrain node: plugin %s: %s\n", hash.c_str(),
                               from_caf(e, "install").message().c_str());
                  promise.deliver(e);
                });
      return promise;
    },
    [=](challenge_atom) -> caf::result<std::string> {
      std::string challenge = security::random_hex(32);
      auto& open = self->state.challenges;
      open.emplace_back(challenge, node_state::clock::now());
      if (open.size() > max_open_challenges)
        open.pop_front();
      return challenge;
    },
    [=](log_atom, int64_t offset, int32_t max_bytes,
        const plugin_credential& credential) -> caf::result<log_chunk> {
      const code_request r{"log read", log_subject(offset, max_bytes),
                           log_proof_purpose(offset, max_bytes, self->state.options.identity)};
      if (status allowed = authorize(self->state, r, credential, caf::to_string(self->node()));
          !allowed)
        return to_caf(allowed);
      auto chunk = read_log(self->state.options.log_file, offset, max_bytes);
      if (!chunk)
        return to_caf(chunk.error());
      return std::move(*chunk);
    },
  };
}

node_actor spawn_node(caf::actor_system& sys, node_options options) {
  if (options.plugin_dir.empty())
    options.plugin_dir = plugin::default_plugin_dir();
  return sys.spawn(node_impl, std::move(options));
}

result<std::vector<int32_t>> offered_gpus(int32_t requested) {
  const int32_t present = cuda::device_count();
  if (requested > present)
    return invalid_argument("asked for " + std::to_string(requested) +
                            " GPUs but this machine has " +
                            std::to_string(present) + " usable CUDA devices (" +
                            (present == 0 ? cuda::unavailable_reason() : "fewer than asked") +
                            ")");
  std::vector<int32_t> devices;
  for (int32_t i = 0; i < (requested < 0 ? present : requested); ++i)
    devices.push_back(i);
  return devices;
}

} // namespace dtrain::actors
