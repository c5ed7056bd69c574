#include "supervisor/service/systemd_notify.h"

#ifdef FRAMEMILL_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace framemill {

void NotifySystemd(const std::string& state) {
#ifdef FRAMEMILL_HAVE_LIBSYSTEMD
  sd_notify(0, state.c_str());
#else
  (void)state;
#endif
}

uint64_t SystemdWatchdogPeriodMs() {
#ifdef FRAMEMILL_HAVE_LIBSYSTEMD
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return 0;
  return usec / 1000;
#else
  return 0;
#endif
}

}  // namespace framemill
