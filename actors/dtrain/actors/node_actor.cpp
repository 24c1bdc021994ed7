#include "dtrain/actors/node_actor.hpp"

#include "dtrain/actors/replica_actor.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::actors {

node_actor::behavior_type node_impl(node_actor::pointer self) {
  return {
    [=](spawn_atom, replica_spec& spec, caf::actor& owner,
        store_actor& store) -> caf::result<replica_actor> {
      return self->system().spawn(replica_front, std::move(spec), std::move(owner),
                                  std::move(store));
    },
    [=](status_atom) -> caf::result<int32_t> { return hosted_replica_count(); },
  };
}

node_actor spawn_node(caf::actor_system& sys) { return sys.spawn(node_impl); }

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
