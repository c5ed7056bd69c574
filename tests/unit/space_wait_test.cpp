// When a job that ran out of space runs again (supervisor/job/space_wait.h): the pure decisions,
// and the wait itself over a real directory.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "common/clock.h"
#include "supervisor/job/space_wait.h"

using framemill::SpaceNeeded;
using framemill::SpaceReading;
using framemill::SpaceReturned;
using framemill::SpaceWatch;

namespace {

constexpr int64_t kMiB = 1 << 20;

SpaceWatch Watch() {
  SpaceWatch w;
  w.scratch_dir = "/spool/active/j/work";
  w.output_dir = "/out";
  return w;
}

}  // namespace

TEST_CASE("space wait: the job runs again only once some file system gained space") {
  const SpaceWatch w = Watch();
  const SpaceReading full{0, 0, 100 * kMiB};
  CHECK_FALSE(SpaceReturned(w, full, full));
  CHECK_FALSE(SpaceReturned(w, full, {kMiB / 2, 0, 100 * kMiB}));  // noise, not space
  CHECK(SpaceReturned(w, full, {0, 50 * kMiB, 100 * kMiB}));      // the output's disk
  CHECK(SpaceReturned(w, full, {0, 0, 200 * kMiB}));              // shared memory
  // Unknown readings (-1) never count as growth.
  CHECK_FALSE(SpaceReturned(w, {-1, -1, -1}, {50 * kMiB, 50 * kMiB, 50 * kMiB}));
}

TEST_CASE("space wait: with the job's estimate, space must also fit what it still writes") {
  SpaceWatch w = Watch();
  w.need = SpaceNeeded{40 * kMiB, 60 * kMiB};
  const SpaceReading full{0, 0, -1};
  CHECK_FALSE(SpaceReturned(w, full, {10 * kMiB, 10 * kMiB, -1}));  // grew, does not fit
  CHECK_FALSE(SpaceReturned(w, full, {50 * kMiB, 10 * kMiB, -1}));
  CHECK(SpaceReturned(w, full, {50 * kMiB, 70 * kMiB, -1}));
}

TEST_CASE("space wait: tries again on a doubling backoff whatever statvfs says (quotas)") {
  CHECK(framemill::SpaceRetryDelayMs(0) == framemill::kFirstRetryMs);
  CHECK(framemill::SpaceRetryDelayMs(1) == 2 * framemill::kFirstRetryMs);
  CHECK(framemill::SpaceRetryDelayMs(50) == framemill::kMaxRetryMs);
}

TEST_CASE("space wait: the lowest of two readings, an unknown one never the lower") {
  const SpaceReading a{5 * kMiB, -1, 7 * kMiB};
  const SpaceReading b{9 * kMiB, 3 * kMiB, -1};
  const SpaceReading low = framemill::Lowest(a, b);
  CHECK(low.scratch == 5 * kMiB);
  CHECK(low.output == 3 * kMiB);
  CHECK(low.shm == 7 * kMiB);
}

// The disk was full when the run failed and had room again before the wait began (its teardown
// took longer than the disk stayed full): the wait compares with the reading at the failure and
// runs the job again at once, not after its backoff (which, after runs that finished no segment,
// is minutes).
TEST_CASE("space wait: space freed before the wait began counts as returned") {
  char dir[] = "/tmp/fm-space-wait-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  SpaceWatch w;
  w.scratch_dir = dir;
  w.output_dir = dir;
  w.shm_dir = "";
  REQUIRE(framemill::ReadSpace(w).scratch > 2 * kMiB);  // the test needs a disk with room
  const std::atomic<bool> stop{false};
  const framemill::Status why(framemill::StatusCode::kNoSpace, "write: No space left on device");
  const uint64_t deadline = framemill::MonotonicMs() + 400;
  // Retry 10: a backoff far past the deadline, so only "space returned" can end the wait early.
  CHECK(framemill::WaitForSpace(w, why, SpaceReading{0, 0, -1}, deadline, 10, stop, nullptr)
            .ok());
  // Without the reading at the failure the same room reads as no change: the wait runs to its
  // deadline and fails with the reason that stopped the job.
  const framemill::Status waited = framemill::WaitForSpace(
      w, why, std::nullopt, framemill::MonotonicMs() + 300, 10, stop, nullptr);
  CHECK(waited.code() == framemill::StatusCode::kNoSpace);
  ::rmdir(dir);
}
