// TEMPORARY: open_sqlite_store arrives with the SQLite store (branch
// wt-store, libdtrain/dtrain/store/sqlite_store.cpp). Until that is merged
// this keeps dtrain linking; delete this file (and its CMake line) on merge.
#include "dtrain/store/experiment_store.hpp"

namespace dtrain::store {

result<std::unique_ptr<experiment_store>> open_sqlite_store(const std::string& path,
                                                            const sqlite_options&) {
  return status(error_code::unavailable,
                "experiment store " + path + ": this dtrain was built without the SQLite store");
}

} // namespace dtrain::store
