# File readers (libdtrain/dtrain/datasets/) and the transforms, compiled into
# dtrain_core. Included by libdtrain/CMakeLists.txt after dtrain_core exists.

# ---- the lead: sources from an experiment's data: section ----


# ---- tables: CSV/TSV, NumPy .npy/.npz ----
target_sources(dtrain_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/csv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv_columns.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv_text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/npy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/npy_format.cpp
  ${CMAKE_CURRENT_LIST_DIR}/npz.cpp)


# ---- images: image folders, image decoding, transforms ----


# ---- hdf5 and record shards ----

