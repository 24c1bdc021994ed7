# Installing dtrain as a package (docs/install.md):
#
#   cmake --install build --prefix P
#
# gives P/include/dtrain/... (the public headers only: the driver API, the
# plugin API and, with the adapter, libtorch's; DTRAIN_PUBLIC_HEADERS below),
# P/lib/libdtrain_{core,serialization,cluster,driver,dashboard}.so
# (with their version links), P/bin/dtrain, the CMake package in
# P/lib/cmake/dtrain (find_package(dtrain): dtrain::dtrain for driver
# programs, dtrain::plugin for plugins; the libraries they link are
# targets too, without headers of their own),
# P/share/dtrain/web (the dashboard's page, also embedded in the library) and
# P/lib/pkgconfig/dtrain.pc. With the libtorch adapter built, also
# P/lib/libdtrain_libtorch.so, P/include/dtrain/libtorch/ and the package's
# `libtorch` component (dtrain::libtorch), whose targets are a file of their
# own, dtrainLibtorchTargets.cmake: only a consumer that asks for the
# component needs libtorch. Everything is relative to P, so the tree can
# be moved. The version is project()'s, in the top CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(DTRAIN_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dtrain")

install(TARGETS dtrain_core dtrain_serialization dtrain_cluster dtrain_driver dtrain_dashboard dtrain_roles dtrain_plugin dtrain_all
  EXPORT dtrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS dtrain RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(EXPORT dtrainTargets NAMESPACE dtrain:: DESTINATION ${DTRAIN_CMAKE_DIR} COMPONENT dev)
if(DTRAIN_HAS_LIBTORCH)
  # dtrain::libtorch names the imported target `torch` in its link
  # interface; dtrainConfig.cmake finds Torch before including this file.
  install(TARGETS dtrain_libtorch
    EXPORT dtrainLibtorchTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
  install(EXPORT dtrainLibtorchTargets NAMESPACE dtrain:: DESTINATION ${DTRAIN_CMAKE_DIR}
    COMPONENT dev)
endif()

configure_package_config_file(cmake/dtrainConfig.cmake.in
  "${CMAKE_BINARY_DIR}/package/dtrainConfig.cmake"
  INSTALL_DESTINATION ${DTRAIN_CMAKE_DIR})
# SameMinorVersion: the version file answers whether a consumer's sources
# build against this install, and within a 0.x minor release they do.
# Binary compatibility is exact and enforced elsewhere: the libraries'
# soname is the full version (a driver runs only with the libdtrain it was
# linked with) and a plugin carries an ABI tag with the full version that a
# node checks before loading it. A plugin that must match a given cluster
# asks for that version with EXACT.
write_basic_package_version_file("${CMAKE_BINARY_DIR}/package/dtrainConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  "${CMAKE_BINARY_DIR}/package/dtrainConfig.cmake"
  "${CMAKE_BINARY_DIR}/package/dtrainConfigVersion.cmake"
  DESTINATION ${DTRAIN_CMAKE_DIR} COMPONENT dev)

# pkg-config: the prefix is found from the .pc file's own place, so that
# `cmake --install --prefix P` (which can differ from CMAKE_INSTALL_PREFIX)
# and a moved tree both give the right paths. No CAF: it is private to the
# shared libraries, and no installed header includes it.
file(RELATIVE_PATH DTRAIN_PC_TO_PREFIX "/P/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/P")
string(REGEX REPLACE "/$" "" DTRAIN_PC_TO_PREFIX "${DTRAIN_PC_TO_PREFIX}")
configure_file(cmake/dtrain.pc.in "${CMAKE_BINARY_DIR}/package/dtrain.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/package/dtrain.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The public headers, by name: a header is installed only when it is
# listed here, so that what a user may include is decided in one place.
# tests/install/install_test.sh checks that none brings in CAF or OpenSSL,
# and that there are at most 48.
#  - the driver API: dtrain/dtrain.hpp (the umbrella and the handles) and
#    what it includes;
set(DTRAIN_DRIVER_HEADERS
  actors/driver/dtrain/dtrain.hpp
  actors/driver/dtrain/api/config.hpp
  libdtrain/dtrain/security/tls_files.hpp
  libdtrain/dtrain/train/metrics.hpp
  libdtrain/dtrain/tune/hyperband.hpp
  libdtrain/dtrain/tune/pareto.hpp
  libdtrain/dtrain/tune/pbt.hpp
  libdtrain/dtrain/tune/scheduler.hpp
  libdtrain/dtrain/tune/search.hpp
  libdtrain/dtrain/tune/space.hpp
  libdtrain/dtrain/tune/stopper.hpp
  libdtrain/dtrain/tune/sweep.hpp
  libdtrain/dtrain/tune/trial.hpp)
#  - the plugin API: dtrain/plugin/plugin.hpp and what it includes, with
#    the helpers an operator's code uses (status macros, the optimizer
#    factory, the file readers and transforms of an operator's data);
set(DTRAIN_PLUGIN_HEADERS
  libdtrain/dtrain/comm/communicator.hpp
  libdtrain/dtrain/core/check.hpp
  libdtrain/dtrain/core/random.hpp
  libdtrain/dtrain/core/status.hpp
  libdtrain/dtrain/data/dataset.hpp
  libdtrain/dtrain/data/idx.hpp
  libdtrain/dtrain/data/loader.hpp
  libdtrain/dtrain/data/sampler.hpp
  libdtrain/dtrain/data/transform.hpp
  libdtrain/dtrain/data/transforms.hpp
  libdtrain/dtrain/datasets/csv.hpp
  libdtrain/dtrain/datasets/hdf5.hpp
  libdtrain/dtrain/datasets/image_folder.hpp
  libdtrain/dtrain/datasets/npy.hpp
  libdtrain/dtrain/datasets/shards.hpp
  libdtrain/dtrain/datasets/source.hpp
  libdtrain/dtrain/nn/layers.hpp
  libdtrain/dtrain/nn/loss.hpp
  libdtrain/dtrain/nn/model.hpp
  libdtrain/dtrain/nn/module.hpp
  libdtrain/dtrain/optim/factory.hpp
  libdtrain/dtrain/optim/lr_schedule.hpp
  libdtrain/dtrain/optim/optimizer.hpp
  libdtrain/dtrain/plugin/plugin.hpp
  libdtrain/dtrain/rendezvous/store.hpp
  libdtrain/dtrain/tensor/device.hpp
  libdtrain/dtrain/tensor/kernel_decls.inc
  libdtrain/dtrain/tensor/kernels.hpp
  libdtrain/dtrain/tensor/ops.hpp
  libdtrain/dtrain/tensor/precision.hpp
  libdtrain/dtrain/tensor/tensor.hpp
  libdtrain/dtrain/train/hyperparameters.hpp
  libdtrain/dtrain/train/operator.hpp)
#  - the libtorch adapter (the package's `libtorch` component).
set(DTRAIN_LIBTORCH_HEADERS
  libtorch/dtrain/libtorch/module.hpp
  libtorch/dtrain/libtorch/operator.hpp
  libtorch/dtrain/libtorch/optimizer.hpp)
set(DTRAIN_PUBLIC_HEADERS ${DTRAIN_DRIVER_HEADERS} ${DTRAIN_PLUGIN_HEADERS})
if(DTRAIN_HAS_LIBTORCH)
  list(APPEND DTRAIN_PUBLIC_HEADERS ${DTRAIN_LIBTORCH_HEADERS})
endif()
foreach(_dtrain_header IN LISTS DTRAIN_PUBLIC_HEADERS)
  # libdtrain/dtrain/tune/sweep.hpp -> include/dtrain/tune/
  string(REGEX REPLACE "^[^/]+/(.+/)?dtrain/" "dtrain/" _dtrain_rel "${_dtrain_header}")
  get_filename_component(_dtrain_dir "${_dtrain_rel}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/${_dtrain_header}"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/${_dtrain_dir}" COMPONENT dev)
endforeach()
# The build's flags (DTRAIN_VERSION, DTRAIN_HAS_CUDA), generated.
install(FILES "${CMAKE_BINARY_DIR}/generated/dtrain/build_config.hpp"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dtrain COMPONENT dev)
