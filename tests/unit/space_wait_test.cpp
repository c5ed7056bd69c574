// When a job that ran out of space runs again (supervisor/job/space_wait.h): the pure decisions.
#include <doctest/doctest.h>

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
