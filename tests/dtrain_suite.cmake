# How the Boost.Test suites become CTest tests, and the rule that ties a
# suite to its file:
#
#   tests/FOLDER/NAME_test.cpp holds one suite at its top level, NAME, and
#   CTest runs it as the test NAME. A file whose cases need different
#   labels or timeouts nests suites inside NAME; CTest then runs each as
#   NAME/INNER. So `ctest -R X` names a file: X_test.cpp.
#
# dtrain_check_suite_names, run once the tests/ folder is read, fails the
# configure where a *_test.cpp of a test executable breaks the rule or is run
# by no dtrain_suite, and where a dtrain_suite names no file. CTest itself
# refuses a name registered twice, which keeps the names (and so the file
# names) unique.

# dtrain_suite(EXECUTABLE SUITE LABELS TIMEOUT): one CTest test that runs
# SUITE (NAME or NAME/INNER) of EXECUTABLE with --run_test.
function(dtrain_suite executable suite labels timeout)
  add_test(NAME ${suite} COMMAND ${executable} --run_test=${suite} --log_level=test_suite)
  set_tests_properties(${suite} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout})
  set_property(GLOBAL APPEND PROPERTY DTRAIN_SUITE_EXECUTABLES ${executable})
  set_property(GLOBAL APPEND PROPERTY DTRAIN_SUITES_OF_${executable} ${suite})
endfunction()

# The names of the suites FILE opens at its top level (outside any other
# suite), in order, into OUT. Reads the text: a suite opened under #if
# counts too.
function(_dtrain_top_level_suites file out)
  file(READ "${file}" text)
  string(REGEX MATCHALL
    "BOOST_(AUTO|FIXTURE)_TEST_SUITE(_END)?\\([ \t]*[A-Za-z0-9_]*" marks "${text}")
  set(depth 0)
  set(names "")
  foreach(mark IN LISTS marks)
    if(mark MATCHES "_END\\(")
      math(EXPR depth "${depth} - 1")
    else()
      if(depth EQUAL 0)
        string(REGEX REPLACE ".*\\([ \t]*" "" name "${mark}")
        list(APPEND names "${name}")
      endif()
      math(EXPR depth "${depth} + 1")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

function(dtrain_check_suite_names)
  set(rule "the rule (tests/dtrain_suite.cmake): FOLDER/NAME_test.cpp holds one top-level suite, NAME, run by dtrain_suite(EXECUTABLE NAME ...) or dtrain_suite(EXECUTABLE NAME/INNER ...)")
  get_property(executables GLOBAL PROPERTY DTRAIN_SUITE_EXECUTABLES)
  list(REMOVE_DUPLICATES executables)
  foreach(executable IN LISTS executables)
    get_property(suites GLOBAL PROPERTY DTRAIN_SUITES_OF_${executable})
    set(registered "")
    foreach(suite IN LISTS suites)
      string(REGEX REPLACE "/.*" "" top "${suite}")
      list(APPEND registered "${top}")
    endforeach()
    get_target_property(sources ${executable} SOURCES)
    get_target_property(source_dir ${executable} SOURCE_DIR)
    set(files "")
    foreach(source IN LISTS sources)
      if(NOT source MATCHES "_test\\.cpp$")
        continue()
      endif()
      get_filename_component(name "${source}" NAME)
      string(REGEX REPLACE "_test\\.cpp$" "" name "${name}")
      get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
      _dtrain_top_level_suites("${path}" found)
      if(NOT found STREQUAL name)
        message(FATAL_ERROR "${source}: its top-level suites are '${found}', not '${name}'; ${rule}")
      endif()
      if(NOT name IN_LIST registered)
        message(FATAL_ERROR "${source}: no dtrain_suite(${executable} ${name} ...) runs its suite; ${rule}")
      endif()
      list(APPEND files "${name}")
    endforeach()
    foreach(suite IN LISTS suites)
      string(REGEX REPLACE "/.*" "" top "${suite}")
      if(NOT top IN_LIST files)
        message(FATAL_ERROR "dtrain_suite(${executable} ${suite}): no ${top}_test.cpp among ${executable}'s sources; ${rule}")
      endif()
    endforeach()
  endforeach()
endfunction()

# Checked at the end of the folder that includes this file, so a suite
# registered anywhere in it counts.
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
  cmake_language(DEFER CALL dtrain_check_suite_names)
else()
  message(STATUS "CMake ${CMAKE_VERSION} < 3.19: suite names are not checked")
endif()
