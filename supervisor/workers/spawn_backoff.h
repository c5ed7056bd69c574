// When the dispatcher may start a replacement worker again after starts failed. A worker binary
// that cannot be started for a moment (replaced by an upgrade while the job runs) must not end a
// night's job at once: the next try is 1, 2, 4, 8 s after each failure in a row, and the
// kSpawnTries-th failure in a row ends the job. Owns the failures in a row and the time of the
// next try; no process, no clock of its own (the caller passes the time). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace framemill {

class SpawnBackoff {
 public:
  static constexpr int kSpawnTries = 5;  // failures in a row to start a worker before giving up

  // Whether a worker may be started at `now_ms`.
  bool Due(uint64_t now_ms) const { return now_ms >= retry_ms_; }
  // A worker was started: the failures in a row are forgotten.
  void Started() { failures_ = 0; }
  // A start failed at `now_ms`: the wait before the next try, or none when the tries are spent.
  std::optional<uint64_t> Failed(uint64_t now_ms);
  // Failures in a row.
  int failures() const { return failures_; }

 private:
  uint64_t retry_ms_ = 0;  // no worker is started before this
  int failures_ = 0;
};

}  // namespace framemill
