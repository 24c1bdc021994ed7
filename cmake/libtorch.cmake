# libtorch for the adapter (libtorch/): found here, at the top, because the
# imported targets of find_package(Torch) are visible only in the directory
# that found them and below (the adapter and its tests both need them).
# Debian's libtorch-dev (`tools/install-deps.sh --libtorch`) is CPU-only and
# leaves CUDA settings alone. DTRAIN_LIBTORCH: AUTO (build the adapter when
# libtorch is found), ON (required), OFF (skip it).
set(DTRAIN_HAS_LIBTORCH 0)
if(DTRAIN_LIBTORCH STREQUAL "OFF")
  message(STATUS "dtrain: libtorch adapter off (DTRAIN_LIBTORCH=OFF)")
  return()
endif()
if(DTRAIN_LIBTORCH STREQUAL "ON")
  find_package(Torch REQUIRED)
else()
  find_package(Torch QUIET)
endif()
if(Torch_FOUND)
  set(DTRAIN_HAS_LIBTORCH 1)
  message(STATUS "dtrain: libtorch adapter with libtorch ${Torch_VERSION} (${TORCH_LIBRARY})")
else()
  message(STATUS "dtrain: libtorch adapter not built (no libtorch: tools/install-deps.sh --libtorch installs it)")
endif()
