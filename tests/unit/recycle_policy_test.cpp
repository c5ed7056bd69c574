#include <doctest/doctest.h>

#include "supervisor/workers/recycle_policy.h"

using namespace framemill;

namespace {
constexpr uint64_t kMiB = 1 << 20;
}

TEST_CASE("jitter lowers each soft limit by at most the jitter fraction, and 0 stays off") {
  RecycleSettings s;
  s.rss_mb = 1000;
  s.gpu_reserved_mb = 0;
  s.max_chunks = 100;
  s.jitter = 0.2;
  std::mt19937_64 rng(1);
  bool varied = false;
  uint64_t first = 0;
  for (int i = 0; i < 200; ++i) {
    SoftLimits l = JitteredLimits(s, rng);
    CHECK(l.rss_bytes <= 1000 * kMiB);
    CHECK(l.rss_bytes >= 800 * kMiB);
    CHECK(l.gpu_reserved_bytes == 0);
    CHECK(l.max_chunks <= 100);
    CHECK(l.max_chunks >= 80);
    if (i == 0) first = l.rss_bytes;
    varied = varied || l.rss_bytes != first;
  }
  CHECK(varied);
}

TEST_CASE("soft limits name what was exceeded") {
  SoftLimits l{500 * kMiB, 2000 * kMiB, 10};
  WorkerFigures f;
  f.rss_bytes = 400 * kMiB;
  f.gpu_reserved_bytes = 1000 * kMiB;
  f.chunks_done = 3;
  CHECK_FALSE(SoftLimitReason(l, f));
  f.rss_bytes = 600 * kMiB;
  CHECK(*SoftLimitReason(l, f) == "rss 600 MiB over the soft limit 500 MiB");
  f.rss_bytes = 0;
  f.gpu_reserved_bytes = 2100 * kMiB;
  CHECK(SoftLimitReason(l, f)->rfind("gpu reserved 2100 MiB", 0) == 0);
  f.gpu_reserved_bytes = 0;
  f.chunks_done = 10;
  CHECK(*SoftLimitReason(l, f) == "ran 10 chunks (max_chunks 10)");
  CHECK_FALSE(SoftLimitReason(SoftLimits{}, f));  // all off
}

TEST_CASE("hard limits and a silent busy worker are reasons to kill, an idle one is not") {
  JobSettings s;
  s.kill.rss_mb = 1000;
  s.hang_timeout_s = 30;
  WorkerFigures f;
  f.rss_bytes = 900 * kMiB;
  f.heartbeat_ms = 100000;
  f.busy = true;
  CHECK_FALSE(HardLimitReason(s, f, 100000 + 29000));
  CHECK(HardLimitReason(s, f, 100000 + 31000)->rfind("no heartbeat for 31.0 s", 0) == 0);
  f.busy = false;  // an idle worker only beats every 200 ms, and has nothing to lose
  CHECK_FALSE(HardLimitReason(s, f, 100000 + 31000));
  f.rss_bytes = 1100 * kMiB;
  CHECK(*HardLimitReason(s, f, 100000) == "rss 1100 MiB over the hard limit 1000 MiB");
}
