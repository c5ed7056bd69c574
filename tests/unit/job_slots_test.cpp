// The service's job slots (supervisor/service/job_slots.h): threads, the wake pipe, ended jobs.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <poll.h>
#include <string>
#include <vector>
#include <thread>

#include "common/clock.h"
#include "supervisor/service/job_slots.h"

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

TEST_CASE("job slots: a job runs on a free thread, wakes the loop when it ends, is taken back") {
  JobSlots slots;
  REQUIRE(slots.Open().ok());
  std::atomic<bool> release{false};
  auto job = std::make_unique<RunningJob>();
  job->id = "a";
  job->alone = true;
  job->alive_ms.store(123);
  JobThread* thread = slots.FreeThread();
  slots.Start(thread, std::move(job), [&](RunningJob*) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  CHECK(slots.Ids() == std::set<std::string>{"a"});
  CHECK(slots.AnyAlone());
  CHECK_FALSE(slots.AnyCpu());
  CHECK(slots.AliveTimes() == std::vector<uint64_t>{123});
  CHECK(slots.FreeThread() != thread);  // busy: another is made
  CHECK(slots.TakeEnded().empty());
  release.store(true);
  pollfd p{slots.wake_fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 10'000) == 1);
  slots.DrainWake();
  std::vector<std::unique_ptr<RunningJob>> ended = slots.TakeEnded();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0]->id == "a");
  CHECK(slots.empty());
  CHECK(Eventually([&] { return !thread->busy(); }));
}

TEST_CASE("job slots: a job silent for the stall limit is stopped once, a live one is not") {
  CHECK(JobStalled(10'000, 9'000, 1000));        // silent for the whole limit
  CHECK_FALSE(JobStalled(10'000, 9'001, 1000));  // just within it
  CHECK_FALSE(JobStalled(10'000, 10'001, 1000));  // alive after `now` was read: life, not stale

  JobSlots slots;
  REQUIRE(slots.Open().ok());
  std::atomic<bool> release{false};
  RunningJob* silent = nullptr;
  for (const char* id : {"silent", "lively"}) {
    auto job = std::make_unique<RunningJob>();
    job->id = id;
    job->alive_ms.store(std::string(id) == "silent" ? MonotonicMs() - 5000 : MonotonicMs());
    RunningJob* started = slots.Start(slots.FreeThread(), std::move(job), [&](RunningJob* j) {
      while (!release.load() && !j->stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    if (std::string(id) == "silent") silent = started;
  }
  CHECK(slots.StopStalled(3000) == std::vector<std::string>{"silent"});
  CHECK(silent->stalled.load());
  CHECK(slots.StopStalled(3000).empty());  // stopped once
  // The stopped job's run sees its stop and ends; the other runs on.
  REQUIRE(Eventually([&] { return slots.TakeEnded().size() == 1; }));
  CHECK(slots.Ids() == std::set<std::string>{"lively"});
  release.store(true);
  REQUIRE(Eventually([&] { return slots.TakeEnded().size() == 1; }));
}
