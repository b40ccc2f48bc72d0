# How the GoogleTest suites are built and registered (tests/CMakeLists.txt; the GPU-only
# build of the device check includes it for tests/cuda).

# The JIT cache the suites compile kernels into. Kernels are keyed by their source, compiler
# and flags, not by the build that asked for them, so a second build of the tests (the
# sanitizer build of scripts/test.sh) can share the first one's cache instead of compiling
# every kernel again.
set(STAX_TEST_CACHE_DIR "${PROJECT_BINARY_DIR}/test-cache" CACHE PATH
    "JIT cache directory of the test suites")
# stax_add_test(NAME SOURCES a.cpp b.cpp LIBS stax_x stax_y)
function(stax_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  # The suites' own code (assertions, small reference loops) at -O1 in optimized builds: it
  # compiles a third faster than at -O2, and the libraries under test keep the build's flags.
  target_compile_options(${name} PRIVATE $<$<CONFIG:RelWithDebInfo,Release>:-O1>)
  target_compile_definitions(${name} PRIVATE
    STAX_EXAMPLES_DIR="${PROJECT_SOURCE_DIR}/examples")
  stax_add_test_entry(${name} ${name})
endfunction()

# stax_add_test_entry(NAME EXECUTABLE [ARGS a b] [ENV VAR=value ...]): a CTest entry that runs
# a suite's executable (a further entry runs part of a suite: a gtest filter, a shard), with
# the suites' JIT cache and ENV. An entry that runs no test (a filter, a lost source file)
# fails instead of passing silently.
function(stax_add_test_entry name executable)
  cmake_parse_arguments(T "" "" "ARGS;ENV" ${ARGN})
  add_test(NAME ${name} COMMAND ${executable} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "STAX_CACHE_DIR=${STAX_TEST_CACHE_DIR};${T_ENV}"
    FAIL_REGULAR_EXPRESSION "\\[  PASSED  \\] 0 tests")
endfunction()
