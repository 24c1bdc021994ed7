#include "support/replica_group.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

#include "support/collective_check.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/test_util.hpp"

namespace dtrain::testing {

train::replica_options options_for(const std::string& op, config_map config,
                                   int64_t global_batch, uint64_t seed) {
  train::replica_options options;
  options.operator_name = op;
  options.config = train::hyperparameters(std::move(config));
  options.global_batch_size = global_batch;
  options.seed = seed;
  options.codec = serialization::default_checkpoint_codec();
  return options;
}

train::replica_options small_mlp(int64_t global_batch) {
  return options_for("mlp_classifier", {{"hidden", "32"}, {"data_dir", fashion_mnist_dir()}},
                     global_batch);
}

result<std::unique_ptr<runner_t>> make_runner(int rank, int n, std::shared_ptr<rendezvous::store> store,
                                              const train::replica_options& options,
                                              const std::string& backend) {
  set_blas_threads(1);
  comm::group_options go;
  go.rank = rank;
  go.size = n;
  go.store = std::move(store);
  go.backend = backend;
  if (backend == "hierarchical")  // two hosts by name, so both levels run
    go.host = "host-" + std::to_string(rank % 2);
  go.timeout = std::chrono::milliseconds(20000);
  DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(go));
  train::comm_replica_context::placement where;
  where.local_rank = rank;
  where.seed = options.seed;
  auto ctx = std::make_unique<train::comm_replica_context>(std::move(c), where, nullptr);
  return runner_t::create(options, std::move(ctx));
}

void run_group(int n, rank_mode mode, const train::replica_options& options,
               const replica_body& body, const std::string& backend) {
  group_stores stores(mode);
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto runner, make_runner(rank, n, stores.for_rank(), options, backend));
    return body(rank, *runner);
  });
  std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), "operator '" << options.operator_name << "', " << n
                                          << " replicas as " << to_string(mode) << ":\n"
                                          << failed);
}

train::bytes bytes_of(const tensor& t) {
  auto v = t.to_vector();
  const char* p = reinterpret_cast<const char*>(v.data());
  return train::bytes(p, p + v.size() * sizeof(float));
}

train::bytes bytes_of(const std::string& s) { return train::bytes(s.begin(), s.end()); }

} // namespace dtrain::testing
