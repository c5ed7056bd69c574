#include "supervisor/job/space_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"

namespace framemill {
namespace {

bool Grew(int64_t before, int64_t now) {
  return before >= 0 && now >= 0 && now - before >= kSpaceGrowthBytes;
}

std::string Mib(int64_t bytes) { return bytes < 0 ? "?" : std::to_string(bytes >> 20); }

}  // namespace

SpaceReading ReadSpace(const SpaceWatch& w) {
  SpaceReading r;
  if (!w.scratch_dir.empty()) r.scratch = FreeBytes(w.scratch_dir);
  if (!w.output_dir.empty()) r.output = FreeBytes(w.output_dir);
  if (!w.shm_dir.empty()) r.shm = FreeBytes(w.shm_dir);
  return r;
}

SpaceReading Lowest(const SpaceReading& a, const SpaceReading& b) {
  const auto low = [](int64_t x, int64_t y) { return x < 0 ? y : y < 0 ? x : std::min(x, y); };
  return {low(a.scratch, b.scratch), low(a.output, b.output), low(a.shm, b.shm)};
}

SpaceWatch JobSpaceWatch(const JobFiles& files) {
  SpaceWatch watch;
  if (files.dir.get() >= 0) watch.scratch_dir = files.path();
  if (files.output_dir.get() >= 0) watch.output_dir = FdPath(files.output_dir.get());
  return watch;
}

bool SpaceReturned(const SpaceWatch& w, const SpaceReading& at_failure, const SpaceReading& now) {
  const bool grew = Grew(at_failure.scratch, now.scratch) ||
                    Grew(at_failure.output, now.output) || Grew(at_failure.shm, now.shm);
  if (!grew) return false;
  if (!w.need) return true;
  SpaceFree free;
  free.scratch_dir = w.scratch_dir;
  free.scratch = now.scratch;
  free.output_dir = w.output_dir;
  free.output = now.output;
  return CheckSpace(*w.need, free).ok();
}

int64_t SpaceRetryDelayMs(int retry) {
  int64_t delay = kFirstRetryMs;
  for (int i = 0; i < retry && delay < kMaxRetryMs; ++i) delay *= 2;
  return std::min(delay, kMaxRetryMs);
}

Status WaitForSpace(const SpaceWatch& watch, const Status& why,
                    const std::optional<SpaceReading>& at_failure, uint64_t deadline_ms, int retry,
                    const std::atomic<bool>& stop,
                    const std::function<void(const std::string&, double)>& report) {
  const uint64_t start = MonotonicMs();
  const uint64_t retry_at = start + static_cast<uint64_t>(SpaceRetryDelayMs(retry));
  const SpaceReading first = ReadSpace(watch);
  const SpaceReading at = at_failure ? Lowest(*at_failure, first) : first;
  const double left_s = deadline_ms > start ? static_cast<double>(deadline_ms - start) / 1000 : 0;
  spdlog::warn("{}; waiting up to {:.0f} s for space, the finished segments kept (free MiB "
               "when it failed: scratch {}, output {}, shared memory {}; now: {}, {}, {})",
               why.ToString(), left_s, Mib(at.scratch), Mib(at.output), Mib(at.shm),
               Mib(first.scratch), Mib(first.output), Mib(first.shm));
  const std::string text = "no_space: " + why.message();
  for (;;) {
    const uint64_t now = MonotonicMs();
    const double waited_s = static_cast<double>(now - start) / 1000;
    if (stop.load()) return Status(StatusCode::kCancelled, "stopped while waiting for space");
    if (now >= deadline_ms) {
      spdlog::error("no space came in the time allowed (no_space_wait_s)");
      return Status(why.code(), why.message() + " (waited for space until no_space_wait_s)");
    }
    const SpaceReading r = ReadSpace(watch);
    if (SpaceReturned(watch, at, r)) {
      spdlog::info("space returned after {:.0f} s (free MiB: scratch {}, output {}, shared "
                   "memory {}): running the job again from its finished segments",
                   waited_s, Mib(r.scratch), Mib(r.output), Mib(r.shm));
      return Status::Ok();
    }
    if (now >= retry_at) {
      spdlog::info("trying the job again after {:.0f} s of waiting for space", waited_s);
      return Status::Ok();
    }
    if (report) report(text, waited_s);
    const uint64_t until = std::min({now + kSpacePollMs, deadline_ms, retry_at});
    while (MonotonicMs() < until && !stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace framemill
