# Included by ctest (TEST_INCLUDE_FILES) after the discovered doctest cases are defined: marks
# RUN_SERIAL the integration tests that must have the machine to themselves, so that the rest of
# the suite can run in parallel (scripts/test.sh runs ctest -j).
#
# Those are the tests that look at what a dead supervisor left in /dev/shm, or that put there
# what no supervisor made. The one that kills a supervisor and checks that the next one clears
# its stale directories: beside it, another test's supervisor could clear them first (seen: it
# failed while other jobs ran on the machine). The one that plants directories of another user
# there: beside it, another test would count them as that test's leftovers.
#
# Every other test only looks at its own scratch directory and at shared memory of its own
# supervisors (tests/integration/harness.cpp, SharedMemoryObjects): a test that kills its
# supervisor on purpose leaves directories the others do not count, and any supervisor may
# clear them. (Until the suite took 25 minutes on 2 cores, every recovery, service, spool and
# shm security test ran alone: 31 tests, 450 s of the run with one of its two cores mostly idle.)
set(framemill_serial_tests
    "recovery: a supervisor killed mid-job leaves no workers, and the next one clears its shared memory"
    "shm security: files planted in /dev/shm by another user do not block or touch a job")
set(framemill_serial_found 0)
foreach(test IN LISTS framemill_integration_tests_TESTS)
  string(REGEX REPLACE "^integration: ?" "" bare "${test}")
  list(FIND framemill_serial_tests "${bare}" at)  # (ctest runs this without IN_LIST)
  if(at GREATER -1)
    set_tests_properties("${test}" PROPERTIES RUN_SERIAL TRUE)
    math(EXPR framemill_serial_found "${framemill_serial_found} + 1")
  endif()
endforeach()
# A renamed test would silently lose its RUN_SERIAL: refuse to run then.
list(LENGTH framemill_serial_tests framemill_serial_wanted)
if(framemill_integration_tests_TESTS AND NOT framemill_serial_found EQUAL framemill_serial_wanted)
  message(FATAL_ERROR "tests/serial_tests.cmake: ${framemill_serial_found} of the "
                      "${framemill_serial_wanted} serial tests found; was one renamed?")
endif()

# The Slurm tests share the one local cluster: one at a time, and stopped after the last
# (slurm_local_cluster_stop in tests/CMakeLists.txt).
foreach(test IN LISTS framemill_integration_tests_TESTS)
  if(test MATCHES "^integration: ?slurm:")
    set_tests_properties("${test}" PROPERTIES RESOURCE_LOCK framemill_slurm
                                              FIXTURES_REQUIRED framemill_slurm)
  endif()
endforeach()
