// The reads a probe starts before it knows the video stream (supervisor/media/reads_ahead.h): a
// packet scan's lines wait, in order, until taken; one never taken, or of the wrong stream, is
// cancelled, also while its queue is full and the scan paused.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/media/reads_ahead.h"

using namespace framemill;
using namespace std::chrono_literals;

TEST_CASE("reads ahead: a scan's lines reach Each in order, those read before it and after") {
  // More lines than one pipe holds, so that some wait while Each has not begun, and the rest
  // pass as they come.
  PacketScan scan(3, {"seq", "1", "200000"}, {});
  CHECK(scan.stream() == 3);
  int64_t n = 0;
  bool in_order = true;
  Result<CommandOutput> r = scan.Each([&](const std::string& line) {
    ++n;
    in_order = in_order && line == std::to_string(n);
  });
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(n == 200000);
  CHECK(in_order);
}

TEST_CASE("reads ahead: a scan never taken is cancelled, also one paused on a full queue") {
  // `yes` never ends: without the cancel, the destructor would wait for ever (ctest's timeout
  // fails the test first). Its queue fills (kMaxWaiting) and the reader pauses, then is told.
  {
    PacketScan endless(0, {"yes"}, {});
    while (endless.Waiting() < PacketScan::kMaxWaiting) std::this_thread::sleep_for(10ms);
  }
  // A scan that fails is reported by Each as RunForEachLine reports it.
  PacketScan failing(0, {"false"}, {});
  Result<CommandOutput> r = failing.Each([](const std::string&) {});
  REQUIRE(r.ok());
  CHECK(r->exit_code != 0);
}
