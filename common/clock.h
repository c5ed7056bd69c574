// Time for heartbeats and timeouts.
#pragma once

#include <cstdint>

namespace framemill {

// CLOCK_MONOTONIC in milliseconds: the same clock in every process of the machine, so a worker's
// heartbeat can be compared with the supervisor's now. Never for wall-clock times.
uint64_t MonotonicMs();

// The same clock in microseconds, for stage timings.
uint64_t MonotonicUs();

}  // namespace framemill
