// Logging setup shared by both processes: spdlog to stderr (journald picks it up under systemd),
// one line per event, the process name in every line.
#pragma once

#include <cstdint>
#include <string>

#include <spdlog/spdlog.h>

namespace framemill {

// Makes a stderr logger named `name` the default. `level`: trace|debug|info|warn|error.
void InitLogging(const std::string& name, const std::string& level);

// CLOCK_MONOTONIC in milliseconds: for heartbeats and timeouts, never for wall-clock times.
uint64_t MonotonicMs();

}  // namespace framemill
