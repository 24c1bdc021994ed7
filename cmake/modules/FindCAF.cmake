# FindCAF: the C++ Actor Framework (CAF) 0.17 as Debian ships it, which has
# no CMake config and no pkg-config file. dtrain's own build uses it (the
# installed package needs no CAF).
#
#   find_package(CAF [0.17] [REQUIRED] [COMPONENTS core io openssl])
#
# Components: core (always searched), io, openssl. Each found component C
# gives an imported target CAF::C (io links CAF::core, openssl links
# CAF::io) and sets CAF_C_FOUND. Also sets CAF_FOUND, CAF_VERSION (read from
# caf/config.hpp, e.g. 0.17.6) and CAF_INCLUDE_DIR. Hints: CAF_ROOT or
# CMAKE_PREFIX_PATH, as for any find module.

find_path(CAF_INCLUDE_DIR caf/all.hpp)

set(CAF_VERSION "")
if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  # CAF_VERSION is one number: major * 10000 + minor * 100 + patch.
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  if(_caf_version_line MATCHES "CAF_VERSION ([0-9]+)")
    set(_caf_n "${CMAKE_MATCH_1}")
    math(EXPR _caf_major "${_caf_n} / 10000")
    math(EXPR _caf_minor "(${_caf_n} / 100) % 100")
    math(EXPR _caf_patch "${_caf_n} % 100")
    set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
  endif()
  unset(_caf_version_line)
endif()

# Each component builds on the one before it (core <- io <- openssl): the
# ones below an asked-for component are searched too, lowest first.
set(_caf_components core)
if("io" IN_LIST CAF_FIND_COMPONENTS OR "openssl" IN_LIST CAF_FIND_COMPONENTS)
  list(APPEND _caf_components io)
endif()
if("openssl" IN_LIST CAF_FIND_COMPONENTS)
  list(APPEND _caf_components openssl)
endif()
foreach(_caf_c IN LISTS CAF_FIND_COMPONENTS)
  if(NOT _caf_c MATCHES "^(core|io|openssl)$")
    set(CAF_${_caf_c}_FOUND FALSE)   # not a CAF component
  endif()
endforeach()
set(_caf_below_found TRUE)
foreach(_caf_c IN LISTS _caf_components)
  string(TOUPPER "${_caf_c}" _caf_C)
  find_library(CAF_${_caf_C}_LIBRARY caf_${_caf_c})
  mark_as_advanced(CAF_${_caf_C}_LIBRARY)
  if(CAF_${_caf_C}_LIBRARY AND CAF_INCLUDE_DIR AND _caf_below_found)
    set(CAF_${_caf_c}_FOUND TRUE)
  else()
    set(CAF_${_caf_c}_FOUND FALSE)
    set(_caf_below_found FALSE)
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR CAF_CORE_LIBRARY
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(CAF_INCLUDE_DIR)

if(CAF_FOUND)
  if(NOT TARGET Threads::Threads)
    find_package(Threads REQUIRED)
  endif()
  # Each target links the one below it: naming CAF::io or CAF::openssl
  # alone is enough.
  set(_caf_below_core Threads::Threads)
  set(_caf_below_io CAF::core)
  set(_caf_below_openssl CAF::io)
  foreach(_caf_c IN LISTS _caf_components)
    string(TOUPPER "${_caf_c}" _caf_C)
    if(CAF_${_caf_c}_FOUND AND NOT TARGET CAF::${_caf_c})
      add_library(CAF::${_caf_c} UNKNOWN IMPORTED)
      set_target_properties(CAF::${_caf_c} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_caf_C}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${_caf_below_${_caf_c}}")
    endif()
  endforeach()
endif()

unset(_caf_components)
unset(_caf_below_found)
unset(_caf_c)
unset(_caf_C)
