// Every helper program the supervisor runs to its end is killed at child_timeout_s
// (supervisor/process/subprocess.h): a probe that never ends costs its job, not the thread.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

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

TEST_CASE("a program run with a stop flag is killed soon after the flag is set") {
  // The compiled engine's builder runs beside a job (supervisor/job/engine_beside.h) and is
  // stopped with it: killed within the watch's 200 ms look, not at child_timeout_s.
  ChildTimeoutFor limit(3600);
  std::atomic<bool> stop{false};
  std::thread setter([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.store(true);
  });
  Result<CommandOutput> stopped = RunAndCapture({"sleep", "3600"}, {}, &stop);
  setter.join();
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.status().code() == StatusCode::kCancelled);
  CHECK(stopped.status().message().find("sleep stopped") != std::string::npos);

  std::atomic<bool> never{false};
  Result<CommandOutput> quick = RunAndCapture({"sh", "-c", "echo done"}, {}, &never);
  REQUIRE(quick.ok());
  CHECK(quick->out == "done\n");
}
