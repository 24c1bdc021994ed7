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

# CAF 0.17.6: Debian ships no CMake config, no FindCAF and no .pc file, so
# cmake/modules/FindCAF.cmake finds it: CAF::core, CAF::io and
# CAF::openssl (TLS between processes; Debian's build links libssl 3
# itself). The installed package needs no CAF (it is private to the shared
# libraries).
list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}/modules")
find_package(CAF 0.17 REQUIRED COMPONENTS core io openssl)
message(STATUS "dtrain: CAF ${CAF_VERSION}")

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
