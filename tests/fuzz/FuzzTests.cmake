# The ctest side of fuzzing, included by tests/CMakeLists.txt. The fixture fuzz_build
# configures and builds the clang project in tests/fuzz/ into <build>/tests/fuzz-build (so the
# instrumented build costs nothing until the fuzz tests run); each fuzz_NAME test then runs
# fuzz_NAME for FRAMEMILL_FUZZ_SECONDS from its seed corpus and fails on any crash, sanitizer
# report, timeout (a single input over 10 s) or memory blow-up (over 2 GiB).

# A missing clang or libFuzzer runtime is a configure error, not a smaller suite.
find_program(FRAMEMILL_CLANGXX NAMES clang++-14 clang++
  DOC "clang++ with libFuzzer (Debian: clang, libclang-rt-14-dev) for the fuzz targets")
if(NOT FRAMEMILL_CLANGXX)
  message(FATAL_ERROR "framemill: clang++ not found; the fuzz tests need it. Install clang and "
                      "libclang-rt-14-dev (scripts/install-deps.sh) or configure with "
                      "-DFRAMEMILL_FUZZ=OFF")
endif()
set(probe_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz-probe)
file(WRITE ${probe_dir}/probe.cpp
  "#include <cstddef>\n#include <cstdint>\n"
  "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
execute_process(
  COMMAND ${FRAMEMILL_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe_dir}/probe.cpp
          -o ${probe_dir}/probe
  RESULT_VARIABLE probe_result ERROR_VARIABLE probe_error OUTPUT_QUIET)
if(NOT probe_result EQUAL 0)
  message(FATAL_ERROR "framemill: ${FRAMEMILL_CLANGXX} cannot link a libFuzzer target with "
                      "AddressSanitizer and UBSan (Debian: install libclang-rt-14-dev, or "
                      "configure with -DFRAMEMILL_FUZZ=OFF):\n${probe_error}")
endif()

# 10 s each in the suite: the seeds and a short search (the suite runs on 2 cores in CI); give
# -DFRAMEMILL_FUZZ_SECONDS=600 for a real search.
set(FRAMEMILL_FUZZ_SECONDS 10 CACHE STRING "Seconds each fuzz target runs in ctest")
set(FRAMEMILL_FUZZ_BUILD_JOBS 2 CACHE STRING "Parallel compile jobs of the fuzz build")
set(fuzz_source_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(fuzz_build_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz-build)

add_test(NAME fuzz_build
  COMMAND ${fuzz_source_dir}/build-fuzzers.sh ${fuzz_source_dir} ${fuzz_build_dir}
          ${FRAMEMILL_CLANGXX} ${FRAMEMILL_FUZZ_BUILD_JOBS} "${CMAKE_CXX_COMPILER_LAUNCHER}")
set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP framemill_fuzzers TIMEOUT 900)

# The ctest half of framemill_add_fuzzer (the build half is in tests/fuzz/CMakeLists.txt).
function(framemill_add_fuzzer name source corpus_dir)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "DICT" "SOURCES")
  set(dict "")
  if(arg_DICT)
    set(dict ${fuzz_source_dir}/${arg_DICT})
  endif()
  add_test(NAME fuzz_${name}
    COMMAND ${fuzz_source_dir}/run-fuzzer.sh ${fuzz_build_dir}/fuzz_${name}
            ${fuzz_source_dir}/${corpus_dir} ${FRAMEMILL_FUZZ_SECONDS}
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz-findings/${name} "${dict}")
  math(EXPR timeout "${FRAMEMILL_FUZZ_SECONDS} + 120")
  set_tests_properties(fuzz_${name} PROPERTIES FIXTURES_REQUIRED framemill_fuzzers
    TIMEOUT ${timeout} LABELS fuzz)
  foreach(file ${source} ${arg_DICT})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${fuzz_source_dir}/${file})
  endforeach()
endfunction()

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${fuzz_source_dir}/fuzzers.cmake)
include(${fuzz_source_dir}/fuzzers.cmake)
