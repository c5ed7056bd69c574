// Every helper program the supervisor runs to its end is killed at child_timeout_s
// (supervisor/process/subprocess.h): a probe that never ends costs its job, not the thread.
#include <doctest/doctest.h>

#include <string>

#include "supervisor/process/subprocess.h"

using namespace framemill;

namespace {

// Sets the child timeout for one test and puts back the one before.
struct ChildTimeoutFor {
  explicit ChildTimeoutFor(double seconds) : before(ChildTimeout()) { SetChildTimeout(seconds); }
  ~ChildTimeoutFor() { SetChildTimeout(before); }
  double before;
};

}  // namespace

TEST_CASE("child timeout: a program that runs past it is killed and named, one that ends is not") {
  ChildTimeoutFor limit(0.5);
  // Not killed, it would hold the test for an hour (ctest's timeout fails it first).
  Result<CommandOutput> hung = RunAndCapture({"sleep", "3600"});
  REQUIRE_FALSE(hung.ok());
  CHECK(hung.status().code() == StatusCode::kTimedOut);
  CHECK(hung.status().message().find("sleep") != std::string::npos);
  CHECK(hung.status().message().find("child_timeout_s") != std::string::npos);

  // A program that prints lines and then hangs: its lines arrive, then it is killed.
  int lines = 0;
  Result<CommandOutput> scan =
      RunForEachLine({"sh", "-c", "echo a; echo b; exec sleep 3600"}, [&](const std::string&) {
        ++lines;
      });
  REQUIRE_FALSE(scan.ok());
  CHECK(scan.status().code() == StatusCode::kTimedOut);
  CHECK(lines == 2);

  Result<CommandOutput> quick = RunAndCapture({"sh", "-c", "echo done"});
  REQUIRE(quick.ok());
  CHECK(quick->exit_code == 0);
  CHECK(quick->out == "done\n");
}
