// The service's systemd watchdog (WatchdogSec= in the unit): WATCHDOG=1 is sent while the
// service's loop keeps feeding it, and stops once the loop is stuck, so that systemd restarts
// the service. It follows the service, not a job's luck: a job silent for job_stall_timeout_s is
// stopped and failed by the loop (JobSlots::StopStalled) while the service goes on; only a job
// still silent a grace later (one that did not end when stopped) starves the watchdog, as the
// last resort.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace framemill {

// The rule: true when every running job showed life within `limit_ms` of `now_ms`
// (`alive_ms`: when each last did, CLOCK_MONOTONIC ms; a time after `now_ms` counts as stale,
// as unsigned arithmetic has it); always true with limit 0.
bool EveryJobAlive(uint64_t now_ms, uint64_t limit_ms, const std::vector<uint64_t>& alive_ms);

// How long after job_stall_timeout_s a stopped job that has not ended starves the watchdog.
constexpr uint64_t kStalledJobGraceMs = 60 * 1000;

// Sends `notify` (WATCHDOG=1) every half period from a thread of its own while Feed/Alive was
// called within the last period; silent otherwise. Alive and Feed may be called from any thread.
class Watchdog {
 public:
  // systemd's period (none: no thread, nothing is sent).
  Watchdog();
  // A period and a sender of one's own (tests); period 0: no thread.
  Watchdog(uint64_t period_ms, std::function<void()> notify);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The loop is alive.
  void Alive();
  // The loop is alive, and so are the running jobs if each showed life within `job_limit_ms`
  // (EveryJobAlive): fed only then.
  void Feed(const std::vector<uint64_t>& job_alive_ms, uint64_t job_limit_ms);
  uint64_t period_ms() const { return period_ms_; }  // 0: systemd asked for no watchdog

 private:
  void Loop();

  const uint64_t period_ms_;
  const std::function<void()> notify_;
  std::atomic<uint64_t> alive_ms_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace framemill
