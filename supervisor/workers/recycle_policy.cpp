#include "supervisor/workers/recycle_policy.h"

#include <algorithm>
#include <cstdio>

namespace framemill {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t Jitter(int64_t limit_mib, double jitter, std::mt19937_64& rng) {
  if (limit_mib <= 0) return 0;
  std::uniform_real_distribution<double> u(0.0, jitter);
  return static_cast<uint64_t>(static_cast<double>(limit_mib) * kMiB * (1.0 - u(rng)));
}

RecycleVerdict Over(RecycleAction action, RecycleLimit limit, const char* what, uint64_t value,
                    uint64_t threshold, const char* kind) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %llu MiB over the %s limit %llu MiB", what,
                static_cast<unsigned long long>(value / kMiB), kind,
                static_cast<unsigned long long>(threshold / kMiB));
  return {action, limit, value, threshold, buf};
}

// A max_chunks verdict's words: the worker's own (jittered) limit beside the configured one, and
// for a standby how far the worker is towards it.
std::string MaxChunksReason(RecycleAction action, uint64_t done, uint64_t limit,
                            int64_t configured) {
  const std::string ran = std::to_string(done);
  if (action == RecycleAction::kStartStandby) {
    return "ran " + ran + " of its " + std::to_string(limit) + " chunks";
  }
  if (configured > 0 && static_cast<uint64_t>(configured) != limit) {
    return "ran " + ran + " chunks, its limit (max_chunks " + std::to_string(configured) +
           " less jitter)";
  }
  return "ran " + ran + " chunks (max_chunks " + std::to_string(limit) + ")";
}

// The first soft limit in `l` that `f` is over, as a verdict of `action`; kKeep if none. `own`:
// the worker's own limits (`l` lowered for a standby), `configured` its max_chunks setting, for
// the verdict's words.
RecycleVerdict OverSoft(RecycleAction action, const SoftLimits& l, const SoftLimits& own,
                        int64_t configured, const WorkerFigures& f) {
  if (l.gpu_reserved_bytes > 0 && f.gpu_reserved_bytes > l.gpu_reserved_bytes) {
    return Over(action, RecycleLimit::kGpuReserved, "gpu reserved", f.gpu_reserved_bytes,
                l.gpu_reserved_bytes, "soft");
  }
  if (l.rss_bytes > 0 && f.rss_bytes > l.rss_bytes) {
    return Over(action, RecycleLimit::kRss, "rss", f.rss_bytes, l.rss_bytes, "soft");
  }
  if (l.max_chunks > 0 && f.chunks_done >= l.max_chunks) {
    return {action, RecycleLimit::kMaxChunks, f.chunks_done, l.max_chunks,
            MaxChunksReason(action, f.chunks_done, own.max_chunks, configured)};
  }
  return {};
}

// A hard limit or a silent busy worker; kKeep if neither.
RecycleVerdict OverHard(const JobSettings& s, const WorkerFigures& f, uint64_t now_ms) {
  const uint64_t gpu = static_cast<uint64_t>(s.kill.gpu_reserved_mb) * kMiB;
  const uint64_t rss = static_cast<uint64_t>(s.kill.rss_mb) * kMiB;
  if (gpu > 0 && f.gpu_reserved_bytes > gpu) {
    return Over(RecycleAction::kKill, RecycleLimit::kGpuReserved, "gpu reserved",
                f.gpu_reserved_bytes, gpu, "hard");
  }
  if (rss > 0 && f.rss_bytes > rss) {
    return Over(RecycleAction::kKill, RecycleLimit::kRss, "rss", f.rss_bytes, rss, "hard");
  }
  const uint64_t timeout_ms = static_cast<uint64_t>(s.hang_timeout_s * 1000);
  if (f.busy && f.heartbeat_ms > 0 && now_ms > f.heartbeat_ms + timeout_ms) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "no heartbeat for %.1f s (hang_timeout_s %.1f)",
                  static_cast<double>(now_ms - f.heartbeat_ms) / 1000.0, s.hang_timeout_s);
    return {RecycleAction::kKill, RecycleLimit::kHang, now_ms - f.heartbeat_ms, timeout_ms, buf};
  }
  return {};
}

// The soft limits lowered to where a standby starts.
SoftLimits StandbyLimits(const SoftLimits& l, const WorkerFigures& f, const WorkerStanding& w,
                         uint64_t now_ms) {
  SoftLimits near = l;
  near.rss_bytes = static_cast<uint64_t>(near.rss_bytes * kStandbyAt);
  near.gpu_reserved_bytes = static_cast<uint64_t>(near.gpu_reserved_bytes * kStandbyAt);
  if (near.max_chunks > 0) {
    // Chunks come in steps: start early enough for a model load (as last measured) to finish
    // before the last chunk does, and at least two chunks and 20% before the end.
    uint64_t ahead = 2;
    if (f.chunks_done > 0 && w.load_ms > 0) {
      uint64_t chunk_ms = std::max<uint64_t>(1, (now_ms - w.ready_ms) / f.chunks_done);
      ahead = std::max<uint64_t>(ahead, (w.load_ms + chunk_ms - 1) / chunk_ms + 1);
    }
    uint64_t by_fraction = static_cast<uint64_t>(near.max_chunks * kStandbyAt);
    uint64_t by_time = near.max_chunks > ahead ? near.max_chunks - ahead : 1;
    near.max_chunks = std::max<uint64_t>(1, std::min(by_fraction, by_time));
  }
  return near;
}

}  // namespace

const char* Name(RecycleAction action) {
  switch (action) {
    case RecycleAction::kKeep:
      return "keep";
    case RecycleAction::kStartStandby:
      return "start_standby";
    case RecycleAction::kRecycle:
      return "recycle";
    case RecycleAction::kKill:
      return "kill";
  }
  return "unknown";
}

const char* Name(RecycleLimit limit) {
  switch (limit) {
    case RecycleLimit::kNone:
      return "none";
    case RecycleLimit::kGpuReserved:
      return "gpu";
    case RecycleLimit::kRss:
      return "rss";
    case RecycleLimit::kMaxChunks:
      return "max_chunks";
    case RecycleLimit::kHang:
      return "hang";
    case RecycleLimit::kStartTimeout:
      return "start_timeout";
    case RecycleLimit::kProtocol:
      return "protocol";
  }
  return "unknown";
}

SoftLimits JitteredLimits(const RecycleSettings& s, std::mt19937_64& rng) {
  SoftLimits l;
  l.rss_bytes = Jitter(s.rss_mb, s.jitter, rng);
  l.gpu_reserved_bytes = Jitter(s.gpu_reserved_mb, s.jitter, rng);
  if (s.max_chunks > 0) {
    std::uniform_real_distribution<double> u(0.0, s.jitter);
    l.max_chunks = static_cast<uint64_t>(static_cast<double>(s.max_chunks) * (1.0 - u(rng)));
    if (l.max_chunks == 0) l.max_chunks = 1;
  }
  return l;
}

RecycleVerdict Judge(const SoftLimits& limits, const JobSettings& settings, const WorkerFigures& f,
                     const WorkerStanding& w, uint64_t now_ms) {
  if (w.phase == WorkerPhase::kLoading) {
    if (now_ms > w.spawn_ms + w.start_timeout_ms) {
      return {RecycleAction::kKill, RecycleLimit::kStartTimeout, now_ms - w.spawn_ms,
              w.start_timeout_ms, "model not loaded within worker_start_timeout_s"};
    }
    return {};
  }
  RecycleVerdict hard = OverHard(settings, f, now_ms);
  if (hard.action != RecycleAction::kKeep || w.phase != WorkerPhase::kActive) return hard;
  const int64_t configured = settings.recycle.max_chunks;
  RecycleVerdict soft = OverSoft(RecycleAction::kRecycle, limits, limits, configured, f);
  if (soft.action != RecycleAction::kKeep) return soft;
  if (!settings.recycle.warm_standby || w.has_standby) return {};
  RecycleVerdict near = OverSoft(RecycleAction::kStartStandby, StandbyLimits(limits, f, w, now_ms),
                                 limits, configured, f);
  // A max_chunks standby for a worker whose run's chunks all fit under its limit: it ends the
  // run without reaching it.
  if (near.limit == RecycleLimit::kMaxChunks &&
      w.run_chunks_left <= limits.max_chunks - f.chunks_done) {
    return {};
  }
  return near;
}

}  // namespace framemill
