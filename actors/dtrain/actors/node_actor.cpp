#include "dtrain/actors/node_actor.hpp"

#include "dtrain/actors/replica_actor.hpp"

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

} // namespace dtrain::actors
