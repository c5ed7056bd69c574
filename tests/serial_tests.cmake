# Included by ctest (TEST_INCLUDE_FILES) after the discovered doctest cases are defined: marks
# RUN_SERIAL the integration tests that must have the machine to themselves, so that the rest of
# the suite can run in parallel (scripts/test.sh runs ctest -j).
#
# Those are the tests that kill a supervisor or a service on purpose and then look at what it
# left: stale shared-memory directories in /dev/shm that the next supervisor must clear. Beside
# them, another test's supervisor could clear those directories first (and a test checking that
# it left nothing would count them as its own). Every other test only looks at its own scratch
# directory and at shared memory whose owner is dead, which a correct concurrent test never
# leaves.
set(framemill_serial_pattern "^integration: ?(recovery|service|spool|shm security):")
foreach(test IN LISTS framemill_integration_tests_TESTS)
  if(test MATCHES "${framemill_serial_pattern}")
    set_tests_properties("${test}" PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()

# The Slurm tests share the one local cluster: one at a time, and stopped after the last
# (slurm_local_cluster_stop in tests/CMakeLists.txt).
foreach(test IN LISTS framemill_integration_tests_TESTS)
  if(test MATCHES "^integration: ?slurm:")
    set_tests_properties("${test}" PROPERTIES RESOURCE_LOCK framemill_slurm
                                              FIXTURES_REQUIRED framemill_slurm)
  endif()
endforeach()
