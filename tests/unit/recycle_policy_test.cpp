#include <doctest/doctest.h>

#include "supervisor/workers/recycle_policy.h"

using namespace framemill;

namespace {
constexpr uint64_t kMiB = 1 << 20;

// An active worker that already has a standby: the verdict comes from the soft and hard limits
// alone.
WorkerStanding ActiveWithStandby() {
  WorkerStanding w;
  w.phase = WorkerPhase::kActive;
  w.has_standby = true;
  return w;
}

// The verdict on soft limits alone (no hard limits, no hang, no standby).
RecycleVerdict Soft(const SoftLimits& l, const WorkerFigures& f) {
  return Judge(l, JobSettings{}, f, ActiveWithStandby(), 0);
}

// The verdict on hard limits and the heartbeat alone (no soft limits).
RecycleVerdict Hard(const JobSettings& s, const WorkerFigures& f, uint64_t now_ms) {
  return Judge(SoftLimits{}, s, f, ActiveWithStandby(), now_ms);
}

// The verdict on an active worker with no standby yet, warm standby on, no hard limits.
RecycleVerdict NearSoft(const SoftLimits& l, const WorkerFigures& f, uint64_t now_ms = 0,
                        uint64_t ready_ms = 0, uint64_t load_ms = 0) {
  WorkerStanding w;
  w.phase = WorkerPhase::kActive;
  w.ready_ms = ready_ms;
  w.load_ms = load_ms;
  JobSettings s;
  s.recycle.warm_standby = true;
  return Judge(l, s, f, w, now_ms);
}

bool Keeps(const RecycleVerdict& v) {
  return v.action == RecycleAction::kKeep && v.limit == RecycleLimit::kNone && v.reason.empty();
}

}  // namespace

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
  CHECK(Keeps(Soft(l, f)));
  f.rss_bytes = 600 * kMiB;
  CHECK(Soft(l, f).reason == "rss 600 MiB over the soft limit 500 MiB");
  f.rss_bytes = 0;
  f.gpu_reserved_bytes = 2100 * kMiB;
  CHECK(Soft(l, f).reason.rfind("gpu reserved 2100 MiB", 0) == 0);
  f.gpu_reserved_bytes = 0;
  f.chunks_done = 10;
  CHECK(Soft(l, f).reason == "ran 10 chunks (max_chunks 10)");
  CHECK(Keeps(Soft(SoftLimits{}, f)));  // all off
}

TEST_CASE("hard limits and a silent busy worker are reasons to kill, an idle one is not") {
  JobSettings s;
  s.kill.rss_mb = 1000;
  s.hang_timeout_s = 30;
  WorkerFigures f;
  f.rss_bytes = 900 * kMiB;
  f.heartbeat_ms = 100000;
  f.busy = true;
  CHECK(Keeps(Hard(s, f, 100000 + 29000)));
  CHECK(Hard(s, f, 100000 + 31000).reason.rfind("no heartbeat for 31.0 s", 0) == 0);
  f.busy = false;  // an idle worker only beats every 200 ms, and has nothing to lose
  CHECK(Keeps(Hard(s, f, 100000 + 31000)));
  f.rss_bytes = 1100 * kMiB;
  CHECK(Hard(s, f, 100000).reason == "rss 1100 MiB over the hard limit 1000 MiB");
}

TEST_CASE("each soft limit recycles with its kind, figure, threshold and text") {
  SoftLimits l{500 * kMiB, 2000 * kMiB, 10};
  WorkerFigures f;
  f.gpu_reserved_bytes = 2100 * kMiB;
  RecycleVerdict v = Soft(l, f);
  CHECK(v.action == RecycleAction::kRecycle);
  CHECK(v.limit == RecycleLimit::kGpuReserved);
  CHECK(std::string(Name(v.limit)) == "gpu");
  CHECK(v.figure == 2100 * kMiB);
  CHECK(v.threshold == 2000 * kMiB);
  CHECK(v.reason == "gpu reserved 2100 MiB over the soft limit 2000 MiB");

  f = WorkerFigures{};
  f.rss_bytes = 600 * kMiB;
  v = Soft(l, f);
  CHECK(v.action == RecycleAction::kRecycle);
  CHECK(v.limit == RecycleLimit::kRss);
  CHECK(std::string(Name(v.limit)) == "rss");
  CHECK(v.figure == 600 * kMiB);
  CHECK(v.threshold == 500 * kMiB);

  f = WorkerFigures{};
  f.chunks_done = 9;
  CHECK(Keeps(Soft(l, f)));
  f.chunks_done = 10;  // max_chunks is reached, not passed
  v = Soft(l, f);
  CHECK(v.action == RecycleAction::kRecycle);
  CHECK(v.limit == RecycleLimit::kMaxChunks);
  CHECK(std::string(Name(v.limit)) == "max_chunks");
  CHECK(v.figure == 10);
  CHECK(v.threshold == 10);

  SUBCASE("gpu reserved is named first, then rss") {
    f.gpu_reserved_bytes = 2100 * kMiB;
    f.rss_bytes = 600 * kMiB;
    CHECK(Soft(l, f).limit == RecycleLimit::kGpuReserved);
    f.gpu_reserved_bytes = 0;
    CHECK(Soft(l, f).limit == RecycleLimit::kRss);
  }
  SUBCASE("memory exactly at a soft limit is not over it") {
    f = WorkerFigures{};
    f.rss_bytes = 500 * kMiB;
    f.gpu_reserved_bytes = 2000 * kMiB;
    CHECK(Keeps(Soft(l, f)));
  }
}

TEST_CASE("each hard limit kills with its kind, figure, threshold and text") {
  JobSettings s;
  s.kill.gpu_reserved_mb = 4000;
  s.kill.rss_mb = 1000;
  s.hang_timeout_s = 30;
  WorkerFigures f;
  f.gpu_reserved_bytes = 4100 * kMiB;
  f.rss_bytes = 1100 * kMiB;
  RecycleVerdict v = Hard(s, f, 0);  // gpu is named first
  CHECK(v.action == RecycleAction::kKill);
  CHECK(v.limit == RecycleLimit::kGpuReserved);
  CHECK(std::string(Name(v.limit)) == "gpu");
  CHECK(v.figure == 4100 * kMiB);
  CHECK(v.threshold == 4000 * kMiB);
  CHECK(v.reason == "gpu reserved 4100 MiB over the hard limit 4000 MiB");

  f.gpu_reserved_bytes = 0;
  v = Hard(s, f, 0);
  CHECK(v.action == RecycleAction::kKill);
  CHECK(v.limit == RecycleLimit::kRss);
  CHECK(std::string(Name(v.limit)) == "rss");
  CHECK(v.figure == 1100 * kMiB);
  CHECK(v.threshold == 1000 * kMiB);

  f.rss_bytes = 0;
  f.busy = true;
  f.heartbeat_ms = 5000;
  v = Hard(s, f, 5000 + 30000);  // exactly the timeout: not yet
  CHECK(Keeps(v));
  v = Hard(s, f, 5000 + 30001);
  CHECK(v.action == RecycleAction::kKill);
  CHECK(v.limit == RecycleLimit::kHang);
  CHECK(std::string(Name(v.limit)) == "hang");
  CHECK(v.figure == 30001);
  CHECK(v.threshold == 30000);
  CHECK(v.reason == "no heartbeat for 30.0 s (hang_timeout_s 30.0)");

  f.heartbeat_ms = 0;  // no heartbeat read yet: no hang either
  CHECK(Keeps(Hard(s, f, 1000000)));
}

TEST_CASE("a hard limit beats a soft one, and a soft one beats a standby") {
  JobSettings s;
  s.kill.rss_mb = 1000;
  s.recycle.warm_standby = true;
  SoftLimits l{500 * kMiB, 0, 0};
  WorkerFigures f;
  f.rss_bytes = 1100 * kMiB;
  WorkerStanding w;  // active, no standby yet
  RecycleVerdict v = Judge(l, s, f, w, 0);
  CHECK(v.action == RecycleAction::kKill);
  CHECK(v.reason == "rss 1100 MiB over the hard limit 1000 MiB");
  f.rss_bytes = 600 * kMiB;
  v = Judge(l, s, f, w, 0);
  CHECK(v.action == RecycleAction::kRecycle);
  CHECK(v.reason == "rss 600 MiB over the soft limit 500 MiB");
}

TEST_CASE("a loading worker is judged by its start timeout alone") {
  JobSettings s;
  s.kill.rss_mb = 1000;
  s.hang_timeout_s = 30;
  SoftLimits l{500 * kMiB, 0, 1};
  WorkerFigures f;
  f.rss_bytes = 1100 * kMiB;  // over both limits, and silent while busy: none of it counts
  f.busy = true;
  f.heartbeat_ms = 1;
  f.chunks_done = 5;
  WorkerStanding w;
  w.phase = WorkerPhase::kLoading;
  w.spawn_ms = 1000;
  w.start_timeout_ms = 60000;
  CHECK(Keeps(Judge(l, s, f, w, 1000 + 60000)));
  RecycleVerdict v = Judge(l, s, f, w, 1000 + 60001);
  CHECK(v.action == RecycleAction::kKill);
  CHECK(v.limit == RecycleLimit::kStartTimeout);
  CHECK(std::string(Name(v.limit)) == "start_timeout");
  CHECK(v.figure == 60001);
  CHECK(v.threshold == 60000);
  CHECK(v.reason == "model not loaded within worker_start_timeout_s");
}

TEST_CASE("a standby or a retiring worker is judged by the hard limits alone") {
  JobSettings s;
  s.kill.rss_mb = 1000;
  s.recycle.warm_standby = true;
  SoftLimits l{500 * kMiB, 0, 1};
  WorkerFigures f;
  f.rss_bytes = 600 * kMiB;  // over the soft limit, and past max_chunks
  f.chunks_done = 3;
  WorkerStanding w;
  w.phase = WorkerPhase::kOther;
  CHECK(Keeps(Judge(l, s, f, w, 0)));
  f.rss_bytes = 1100 * kMiB;
  CHECK(Judge(l, s, f, w, 0).action == RecycleAction::kKill);
}

TEST_CASE("a standby starts just over 80% of a memory soft limit") {
  SoftLimits l{1000 * kMiB, 2000 * kMiB, 0};
  WorkerFigures f;
  f.rss_bytes = 800 * kMiB;  // at 80%: not over it
  CHECK(Keeps(NearSoft(l, f)));
  f.rss_bytes = 800 * kMiB + 1;
  RecycleVerdict v = NearSoft(l, f);
  CHECK(v.action == RecycleAction::kStartStandby);
  CHECK(v.limit == RecycleLimit::kRss);
  CHECK(v.figure == 800 * kMiB + 1);
  CHECK(v.threshold == 800 * kMiB);
  CHECK(v.reason == "rss 800 MiB over the soft limit 800 MiB");

  f.rss_bytes = 0;
  f.gpu_reserved_bytes = 1600 * kMiB;
  CHECK(Keeps(NearSoft(l, f)));
  f.gpu_reserved_bytes = 1600 * kMiB + 1;
  v = NearSoft(l, f);
  CHECK(v.action == RecycleAction::kStartStandby);
  CHECK(v.limit == RecycleLimit::kGpuReserved);
  CHECK(v.threshold == 1600 * kMiB);
  CHECK(v.reason == "gpu reserved 1600 MiB over the soft limit 1600 MiB");
}

TEST_CASE("a standby starts at 80% of max_chunks and at least two chunks before the end") {
  WorkerFigures f;
  // 10 chunks: 80% is 8, two before the end is 8.
  f.chunks_done = 7;
  CHECK(Keeps(NearSoft({0, 0, 10}, f)));
  f.chunks_done = 8;
  RecycleVerdict v = NearSoft({0, 0, 10}, f);
  CHECK(v.action == RecycleAction::kStartStandby);
  CHECK(v.limit == RecycleLimit::kMaxChunks);
  CHECK(v.threshold == 8);
  CHECK(v.reason == "ran 8 of its 10 chunks");
  // 100 chunks: 80% (80) comes before two from the end (98).
  f.chunks_done = 79;
  CHECK(Keeps(NearSoft({0, 0, 100}, f)));
  f.chunks_done = 80;
  CHECK(NearSoft({0, 0, 100}, f).threshold == 80);
  // 5 chunks: 80% is 4, two before the end is 3; rounding down, the earlier wins.
  f.chunks_done = 2;
  CHECK(Keeps(NearSoft({0, 0, 5}, f)));
  f.chunks_done = 3;
  CHECK(NearSoft({0, 0, 5}, f).threshold == 3);
  // 3 chunks: 80% is 2 (2.4 rounded down), two before the end is 1.
  f.chunks_done = 1;
  CHECK(NearSoft({0, 0, 3}, f).threshold == 1);
  // 1 chunk: the threshold never falls to 0, and the soft limit itself comes first.
  f.chunks_done = 0;
  CHECK(Keeps(NearSoft({0, 0, 1}, f)));
  f.chunks_done = 1;
  CHECK(NearSoft({0, 0, 1}, f).action == RecycleAction::kRecycle);
}

TEST_CASE("no max_chunks standby for a worker whose run ends before its limit") {
  WorkerFigures f;
  f.chunks_done = 8;  // of 10: the standby point
  JobSettings s;
  s.recycle.warm_standby = true;
  WorkerStanding w;
  // Two chunks left in the run (its own in flight included): it ends the run at its limit at
  // most, so no replacement loads a model for nothing.
  w.run_chunks_left = 2;
  CHECK(Keeps(Judge({0, 0, 10}, s, f, w, 0)));
  // Three left: it would reach the limit with one to go, so the standby starts.
  w.run_chunks_left = 3;
  CHECK(Judge({0, 0, 10}, s, f, w, 0).action == RecycleAction::kStartStandby);
  // A memory limit is not about chunks: its standby starts however few are left.
  w.run_chunks_left = 0;
  f.rss_bytes = 900 * kMiB;
  RecycleVerdict v = Judge({1000 * kMiB, 0, 10}, s, f, w, 0);
  CHECK(v.action == RecycleAction::kStartStandby);
  CHECK(v.limit == RecycleLimit::kRss);
}

TEST_CASE("a max_chunks recycle names the configured limit when jitter lowered it") {
  WorkerFigures f;
  f.chunks_done = 141;
  JobSettings s;
  s.recycle.max_chunks = 150;
  RecycleVerdict v = Judge({0, 0, 141}, s, f, ActiveWithStandby(), 0);
  CHECK(v.action == RecycleAction::kRecycle);
  CHECK(v.threshold == 141);
  CHECK(v.reason == "ran 141 chunks, its limit (max_chunks 150 less jitter)");
  s.recycle.max_chunks = 141;  // no jitter drawn
  CHECK(Judge({0, 0, 141}, s, f, ActiveWithStandby(), 0).reason ==
        "ran 141 chunks (max_chunks 141)");
}

TEST_CASE("a standby starts early enough for a model load at the worker's chunk pace") {
  // Ready at 0, a chunk every second, a model load of 5 s: the standby needs ceil(5000/1000)+1 =
  // 6 chunks of warning, so with max_chunks 20 it starts at 14 (not 16, 80%).
  WorkerFigures f;
  f.chunks_done = 13;
  CHECK(Keeps(NearSoft({0, 0, 20}, f, 13000, 0, 5000)));
  f.chunks_done = 14;
  RecycleVerdict v = NearSoft({0, 0, 20}, f, 14000, 0, 5000);
  CHECK(v.action == RecycleAction::kStartStandby);
  CHECK(v.threshold == 14);
  // No load measured yet: 80% and two chunks, as above.
  f.chunks_done = 14;
  CHECK(Keeps(NearSoft({0, 0, 20}, f, 14000, 0, 0)));
}

TEST_CASE("a worker that has a standby, or warm standby off, gets no standby") {
  SoftLimits l{1000 * kMiB, 0, 0};
  WorkerFigures f;
  f.rss_bytes = 900 * kMiB;
  JobSettings s;
  s.recycle.warm_standby = true;
  WorkerStanding w;
  CHECK(Judge(l, s, f, w, 0).action == RecycleAction::kStartStandby);
  w.has_standby = true;
  CHECK(Keeps(Judge(l, s, f, w, 0)));
  w.has_standby = false;
  s.recycle.warm_standby = false;
  CHECK(Keeps(Judge(l, s, f, w, 0)));
  // Over the soft limit itself, it is recycled whether or not it has a standby.
  f.rss_bytes = 1100 * kMiB;
  w.has_standby = true;
  CHECK(Judge(l, s, f, w, 0).action == RecycleAction::kRecycle);
}

TEST_CASE("the kinds of limits and actions have the names result.json and metrics use") {
  CHECK(std::string(Name(RecycleLimit::kNone)) == "none");
  CHECK(std::string(Name(RecycleLimit::kGpuReserved)) == "gpu");
  CHECK(std::string(Name(RecycleLimit::kRss)) == "rss");
  CHECK(std::string(Name(RecycleLimit::kMaxChunks)) == "max_chunks");
  CHECK(std::string(Name(RecycleLimit::kHang)) == "hang");
  CHECK(std::string(Name(RecycleLimit::kStartTimeout)) == "start_timeout");
  CHECK(std::string(Name(RecycleLimit::kProtocol)) == "protocol");
  CHECK(std::string(Name(RecycleAction::kKeep)) == "keep");
  CHECK(std::string(Name(RecycleAction::kStartStandby)) == "start_standby");
  CHECK(std::string(Name(RecycleAction::kRecycle)) == "recycle");
  CHECK(std::string(Name(RecycleAction::kKill)) == "kill");
}
