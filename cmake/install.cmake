# Installing dtrain as a package (docs/install.md):
#
#   cmake --install build --prefix P
#
# gives P/include/dtrain/..., P/lib/libdtrain_{core,serialization,cluster,driver,dashboard}.so
# (with their version links), P/bin/dtrain, the CMake package in
# P/lib/cmake/dtrain (find_package(dtrain): dtrain::dtrain, dtrain::plugin,
# dtrain::core, dtrain::serialization, dtrain::cluster, dtrain::driver, dtrain::dashboard),
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

# The CAF components the package needs: those dtrain_cluster links publicly
# (io now; openssl too once the actors headers expose CAF's TLS).
get_target_property(_dtrain_actors_public dtrain_cluster INTERFACE_LINK_LIBRARIES)
set(DTRAIN_CAF_COMPONENTS core io)
if("CAF::openssl" IN_LIST _dtrain_actors_public)
  list(APPEND DTRAIN_CAF_COMPONENTS openssl)
endif()
list(JOIN DTRAIN_CAF_COMPONENTS " " DTRAIN_CAF_COMPONENTS_TEXT)

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
  "${PROJECT_SOURCE_DIR}/cmake/modules/FindCAF.cmake"
  DESTINATION ${DTRAIN_CMAKE_DIR} COMPONENT dev)

# pkg-config: the prefix is found from the .pc file's own place, so that
# `cmake --install --prefix P` (which can differ from CMAKE_INSTALL_PREFIX)
# and a moved tree both give the right paths. CAF is in Libs because the
# actors headers instantiate CAF templates in the consumer's code.
file(RELATIVE_PATH DTRAIN_PC_TO_PREFIX "/P/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/P")
string(REGEX REPLACE "/$" "" DTRAIN_PC_TO_PREFIX "${DTRAIN_PC_TO_PREFIX}")
set(DTRAIN_PC_CAF_CFLAGS "")
if(NOT CAF_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
  set(DTRAIN_PC_CAF_CFLAGS " -I${CAF_INCLUDE_DIR}")
endif()
get_filename_component(_dtrain_caf_libdir "${CAF_CORE_LIBRARY}" DIRECTORY)
set(DTRAIN_PC_CAF_LIBS "")
foreach(_dtrain_caf IN LISTS DTRAIN_CAF_COMPONENTS)
  string(PREPEND DTRAIN_PC_CAF_LIBS "-lcaf_${_dtrain_caf} ")   # dependents first
endforeach()
string(STRIP "${DTRAIN_PC_CAF_LIBS}" DTRAIN_PC_CAF_LIBS)
if(NOT _dtrain_caf_libdir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  set(DTRAIN_PC_CAF_LIBS "-L${_dtrain_caf_libdir} ${DTRAIN_PC_CAF_LIBS}")
endif()
configure_file(cmake/dtrain.pc.in "${CMAKE_BINARY_DIR}/package/dtrain.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/package/dtrain.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

foreach(_dtrain_side cluster driver)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/actors/${_dtrain_side}/dtrain"
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
endforeach()
