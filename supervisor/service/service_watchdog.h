// The service's systemd watchdog (WatchdogSec= in the unit): WATCHDOG=1 is sent while the
// service's loop keeps feeding it, and stops once the loop is stuck, so that systemd restarts
// the service. The loop feeds it only while every running job has shown life (its launch or a
// progress report) within the period: a job stuck without progress gets the service restarted
// too, as when the loop itself ran the job.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace framemill {

// The rule: true when every running job showed life within `period_ms` of `now_ms`
// (`alive_ms`: when each last did, CLOCK_MONOTONIC ms; a time after `now_ms` counts as stale,
// as unsigned arithmetic has it); always true with period 0 (no watchdog).
bool EveryJobAlive(uint64_t now_ms, uint64_t period_ms, const std::vector<uint64_t>& alive_ms);

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
  // The loop is alive, and so are the running jobs if EveryJobAlive says so: fed only then.
  void Feed(const std::vector<uint64_t>& job_alive_ms);
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
