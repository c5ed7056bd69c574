// The supervisor's rules for replacing workers, as pure functions of a worker's reported figures
// (so they can be tested without processes). Soft limits retire a worker between chunks; hard
// limits and a missing heartbeat kill it.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "common/config.h"

namespace framemill {

// What a worker last reported (bytes, counts, CLOCK_MONOTONIC ms).
struct WorkerFigures {
  uint64_t rss_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t chunks_done = 0;
  uint64_t heartbeat_ms = 0;
  bool busy = false;  // holds at least one chunk
};

// One worker's soft limits after jitter; 0 = off.
struct SoftLimits {
  uint64_t rss_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t max_chunks = 0;
};

// Lowers each configured soft limit by a random fraction in [0, jitter).
SoftLimits JitteredLimits(const RecycleSettings& settings, std::mt19937_64& rng);

// Why the worker should be recycled, or nullopt. E.g. "rss 812 MiB over the soft limit 800 MiB".
std::optional<std::string> SoftLimitReason(const SoftLimits& limits, const WorkerFigures& f);

// Why the worker must be killed now, or nullopt: a hard memory limit, or no heartbeat for
// hang_timeout_s while it holds a chunk.
std::optional<std::string> HardLimitReason(const JobSettings& settings, const WorkerFigures& f,
                                           uint64_t now_ms);

}  // namespace framemill
