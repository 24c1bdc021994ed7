# Finds every third-party library dtrain uses (tools/install-deps.sh installs
# them from Debian's packages) and names each by an imported target.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Boost REQUIRED COMPONENTS unit_test_framework)

# OpenBLAS: Debian's pthread build. Its CMake config sets only variables.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread
          HINTS /usr/include/x86_64-linux-gnu/openblas-pthread)
find_library(OPENBLAS_LIBRARY openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: run tools/install-deps.sh")
endif()
add_library(dtrain::openblas UNKNOWN IMPORTED)
set_target_properties(dtrain::openblas PROPERTIES
  IMPORTED_LOCATION "${OPENBLAS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${OPENBLAS_INCLUDE_DIR}")

# CAF 0.17.6: Debian ships no CMake config, no FindCAF and no .pc file.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
find_library(CAF_OPENSSL_LIBRARY caf_openssl)
if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY OR NOT CAF_IO_LIBRARY OR NOT CAF_OPENSSL_LIBRARY)
  message(FATAL_ERROR "CAF not found: run tools/install-deps.sh (libcaf-dev)")
endif()
add_library(CAF::core UNKNOWN IMPORTED)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(CAF::io UNKNOWN IMPORTED)
set_target_properties(CAF::io PROPERTIES
  IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
  INTERFACE_LINK_LIBRARIES CAF::core)
# Mutual TLS between dtrain processes (libcaf_openssl.so, linked against
# OpenSSL 3; it comes before caf_io on the link line through this target).
# dtrain's own TLS code (actors/tls.cpp) uses libssl directly (OpenSSL is
# found below).
add_library(CAF::openssl UNKNOWN IMPORTED)
set_target_properties(CAF::openssl PROPERTIES
  IMPORTED_LOCATION "${CAF_OPENSSL_LIBRARY}"
  INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL")
file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_ver REGEX "^#define CAF_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" CAF_VERSION_NUM "${_caf_ver}")
message(STATUS "dtrain: CAF version ${CAF_VERSION_NUM}")

find_package(CapnProto CONFIG REQUIRED)
find_package(Gloo CONFIG REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)   # the experiment store; CMake's module: SQLite::SQLite3
find_package(OpenSSL 3.0 REQUIRED)  # libcrypto (OpenSSL::Crypto): cluster certificates, SHA-256 of plugins
# Not found here until an issue uses it: spdlog (nothing logs through it yet).

set(DTRAIN_HAS_NCCL 0)
if(DTRAIN_HAS_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(DTRAIN_HAS_NCCL 1)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
  message(STATUS "dtrain: CUDA ${CUDAToolkit_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${DTRAIN_HAS_NCCL}")
else()
  message(STATUS "dtrain: CUDA not found, building CPU-only")
endif()
