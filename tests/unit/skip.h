// Ends the calling unit test as skipped: ctest runs each doctest case on its own and reports exit
// code 77 (SKIP_RETURN_CODE) as "Skipped". doctest's own skip decorator would exit 0 and read as
// "Passed", so a test that cannot run where it runs calls this instead.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace framemill::unit {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] inline void SkipTest(const std::string& reason) {
  std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

#ifdef FRAMEMILL_TESTDATA
// The real clip `name`, read in place from the shared test data beside the checkout
// (tests/data/SOURCES.md); the calling test is skipped, with the reason, where it is absent.
inline std::string TestClip(const std::string& name) {
  const std::string path = std::string(FRAMEMILL_TESTDATA) + "/" + name;
  if (::access(path.c_str(), R_OK) != 0) {
    SkipTest(path + " is not here: the real clips are read in place from shared/testdata beside "
                    "the checkout");
  }
  return path;
}
#endif

}  // namespace framemill::unit
