#include "supervisor/service/service_watchdog.h"

#include <chrono>

#include "common/clock.h"
#include "supervisor/service/systemd_notify.h"

namespace framemill {

bool EveryJobAlive(uint64_t now_ms, uint64_t limit_ms, const std::vector<uint64_t>& alive_ms) {
  if (limit_ms == 0) return true;
  for (uint64_t alive : alive_ms) {
    if (now_ms - alive >= limit_ms) return false;
  }
  return true;
}

Watchdog::Watchdog() : Watchdog(SystemdWatchdogPeriodMs(), [] { NotifySystemd("WATCHDOG=1"); }) {}

Watchdog::Watchdog(uint64_t period_ms, std::function<void()> notify)
    : period_ms_(period_ms), notify_(std::move(notify)), alive_ms_(MonotonicMs()) {
  if (period_ms_ > 0) thread_ = std::thread([this] { Loop(); });
}

Watchdog::~Watchdog() {
  done_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Alive() { alive_ms_.store(MonotonicMs()); }

void Watchdog::Feed(const std::vector<uint64_t>& job_alive_ms, uint64_t job_limit_ms) {
  if (EveryJobAlive(MonotonicMs(), job_limit_ms, job_alive_ms)) Alive();
}

void Watchdog::Loop() {
  while (!done_.load()) {
    if (MonotonicMs() - alive_ms_.load() < period_ms_) notify_();
    for (uint64_t slept = 0; slept < period_ms_ / 2 && !done_.load(); slept += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace framemill
