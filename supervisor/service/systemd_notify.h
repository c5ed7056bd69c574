// What the service tells systemd (sd_notify(3)): READY=1, STATUS= lines, WATCHDOG=1, STOPPING=1.
// The one place that calls libsystemd; a build without it runs the same and tells nobody.
// Thread-safe (sd_notify writes one datagram per call).
#pragma once

#include <cstdint>
#include <string>

namespace framemill {

// Sends `state` ("READY=1\nSTATUS=idle", "WATCHDOG=1", ...) to systemd; nothing when the
// service was not started by systemd or the build has no libsystemd.
void NotifySystemd(const std::string& state);

// The watchdog period systemd asked for (WatchdogSec=), in ms; 0 when it asked for none.
uint64_t SystemdWatchdogPeriodMs();

}  // namespace framemill
