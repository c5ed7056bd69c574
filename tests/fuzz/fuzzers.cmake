# The fuzz targets, one line each, read by both sides: tests/fuzz/CMakeLists.txt (the clang
# project that builds fuzz_NAME) and tests/fuzz/FuzzTests.cmake (the ctest test fuzz_NAME).
#   framemill_add_fuzzer(NAME SOURCE CORPUS_DIR [DICT file] [SOURCES file...])
# SOURCE, CORPUS_DIR and DICT (a libFuzzer dictionary) are relative to tests/fuzz/; SOURCES (code
# the target needs beyond common/'s parsers) to the repository root.
framemill_add_fuzzer(job_parse job_parse_fuzz.cpp corpus/job_parse DICT json.dict)
framemill_add_fuzzer(config_parse config_parse_fuzz.cpp corpus/config_parse DICT json.dict)
# The validators of worker-written shared memory.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/shm_validate_fuzz.cpp)
  framemill_add_fuzzer(shm_validate shm_validate_fuzz.cpp corpus/shm_validate
                       SOURCES common/shm_validate.cpp)
endif()
# What the supervisor parses of a submitter's files (a model card, a face table) and the face
# detector's replies.
framemill_add_fuzzer(user_files user_files_fuzz.cpp corpus/user_files DICT json.dict
                     SOURCES common/model_card.cpp common/checked_file.cpp common/file_util.cpp
                             common/posix_acl.cpp common/user_rights.cpp common/face_detection.cpp
                             common/sha256.cpp supervisor/faces/face_table.cpp)
