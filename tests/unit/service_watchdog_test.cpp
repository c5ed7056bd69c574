// The service's watchdog (supervisor/service/service_watchdog.h): its rule and its thread.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "supervisor/service/service_watchdog.h"

using namespace framemill;

namespace {

// Waits up to 10 s for `done`; the condition a test checks, not a sleep it bets on.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace

TEST_CASE("service watchdog: fed only while every running job showed life within its limit") {
  CHECK(EveryJobAlive(10'000, 1000, {}));               // no job: the loop alone counts
  CHECK(EveryJobAlive(10'000, 1000, {9'500, 9'001}));   // both within the period
  CHECK_FALSE(EveryJobAlive(10'000, 1000, {9'500, 9'000}));  // one silent for a whole period
  CHECK_FALSE(EveryJobAlive(10'000, 1000, {10'001}));   // after now: stale, as before
  CHECK(EveryJobAlive(10'000, 0, {0}));                 // no watchdog: always
}

TEST_CASE("service watchdog: notifies while fed, falls silent once not") {
  std::atomic<int> sent{0};
  {
    Watchdog none(0, [&] { ++sent; });
    CHECK(none.period_ms() == 0);
  }
  CHECK(sent.load() == 0);  // period 0: no thread, nothing sent

  Watchdog dog(200, [&] { ++sent; });
  dog.Feed({MonotonicMs()}, 200);
  REQUIRE(Eventually([&] { return sent.load() > 0; }));
  dog.Feed({MonotonicMs() - 1000}, 200);  // a job silent for longer than its limit: not fed
  std::this_thread::sleep_for(std::chrono::milliseconds(450));  // past the last feed's period
  const int quiet = sent.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(sent.load() == quiet);
  dog.Alive();
  CHECK(Eventually([&] { return sent.load() > quiet; }));
}
