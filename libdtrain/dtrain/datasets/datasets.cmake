# File readers (libdtrain/dtrain/datasets/) and the transforms, compiled into
# dtrain_core. Included by libdtrain/CMakeLists.txt after dtrain_core exists.

# ---- the lead: sources from an experiment's data: section ----


# ---- tables: CSV/TSV, NumPy .npy/.npz ----


# ---- images: image folders, image decoding, transforms ----


# ---- hdf5 and record shards ----
target_sources(dtrain_core PRIVATE
  dtrain/datasets/shard_index.cpp
  dtrain/datasets/shards.cpp
  dtrain/datasets/shards_write.cpp)

