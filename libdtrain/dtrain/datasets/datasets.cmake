# File readers (libdtrain/dtrain/datasets/) and the transforms, compiled into
# dtrain_core. Included by libdtrain/CMakeLists.txt after dtrain_core exists.

# ---- the lead: sources from an experiment's data: section ----
target_sources(dtrain_core PRIVATE
  dtrain/datasets/source.cpp
  dtrain/datasets/cached.cpp
  dtrain/train/file_data.cpp
  dtrain/train/file_transforms.cpp
  dtrain/experiments/data_reading.cpp)


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
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)
target_sources(dtrain_core PRIVATE
  dtrain/datasets/image_decode.cpp
  dtrain/datasets/image_folder.cpp
  dtrain/data/transforms.cpp)
target_link_libraries(dtrain_core PRIVATE PNG::PNG JPEG::JPEG)


# ---- hdf5 and record shards ----
target_sources(dtrain_core PRIVATE
  dtrain/datasets/shard_index.cpp
  dtrain/datasets/shards.cpp
  dtrain/datasets/shards_write.cpp
  dtrain/datasets/hdf5.cpp)
# Debian's libhdf5-dev (serial 1.10): its headers sit in /usr/include/hdf5/serial.
# Only hdf5.cpp sees them, so the other sources keep their flags (and their
# ccache entries).
find_package(HDF5 REQUIRED COMPONENTS C)
set_source_files_properties(dtrain/datasets/hdf5.cpp PROPERTIES
  INCLUDE_DIRECTORIES "${HDF5_C_INCLUDE_DIRS}" COMPILE_DEFINITIONS "${HDF5_C_DEFINITIONS}")
target_link_libraries(dtrain_core PRIVATE ${HDF5_C_LIBRARIES})

