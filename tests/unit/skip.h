// Ends the calling unit test as skipped: ctest runs each doctest case on its own and reports exit
// code 77 (SKIP_RETURN_CODE) as "Skipped". doctest's own skip decorator would exit 0 and read as
// "Passed", so a test that cannot run where it runs calls this instead.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace framemill::unit {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] inline void SkipTest(const std::string& reason) {
  std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

}  // namespace framemill::unit
