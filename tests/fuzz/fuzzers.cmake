# The fuzz targets, one line each, read by both sides: tests/fuzz/CMakeLists.txt (the clang
# project that builds fuzz_NAME) and tests/fuzz/FuzzTests.cmake (the ctest test "fuzz: NAME").
#   framemill_add_fuzzer(NAME SOURCE CORPUS_DIR [EXTRA_SOURCE...])
# SOURCE and CORPUS_DIR are relative to tests/fuzz/; EXTRA_SOURCE (code the target needs beyond
# common/'s parsers) to the repository root.
framemill_add_fuzzer(job_parse job_parse_fuzz.cpp corpus/job_parse)
framemill_add_fuzzer(config_parse config_parse_fuzz.cpp corpus/config_parse)
# The validators of worker-written shared memory (their sources go after the corpus directory).
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/shm_validate_fuzz.cpp)
  framemill_add_fuzzer(shm_validate shm_validate_fuzz.cpp corpus/shm_validate)
endif()
