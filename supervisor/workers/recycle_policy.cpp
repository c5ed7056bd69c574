#include "supervisor/workers/recycle_policy.h"

#include <cstdio>

namespace framemill {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t Jitter(int64_t limit_mib, double jitter, std::mt19937_64& rng) {
  if (limit_mib <= 0) return 0;
  std::uniform_real_distribution<double> u(0.0, jitter);
  return static_cast<uint64_t>(static_cast<double>(limit_mib) * kMiB * (1.0 - u(rng)));
}

std::string Over(const char* what, uint64_t value, uint64_t limit, const char* kind) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %llu MiB over the %s limit %llu MiB", what,
                static_cast<unsigned long long>(value / kMiB), kind,
                static_cast<unsigned long long>(limit / kMiB));
  return buf;
}

}  // namespace

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

std::optional<std::string> SoftLimitReason(const SoftLimits& l, const WorkerFigures& f) {
  if (l.gpu_reserved_bytes > 0 && f.gpu_reserved_bytes > l.gpu_reserved_bytes) {
    return Over("gpu reserved", f.gpu_reserved_bytes, l.gpu_reserved_bytes, "soft");
  }
  if (l.rss_bytes > 0 && f.rss_bytes > l.rss_bytes) {
    return Over("rss", f.rss_bytes, l.rss_bytes, "soft");
  }
  if (l.max_chunks > 0 && f.chunks_done >= l.max_chunks) {
    return "ran " + std::to_string(f.chunks_done) + " chunks (max_chunks " +
           std::to_string(l.max_chunks) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> HardLimitReason(const JobSettings& s, const WorkerFigures& f,
                                           uint64_t now_ms) {
  uint64_t gpu = static_cast<uint64_t>(s.kill.gpu_reserved_mb) * kMiB;
  uint64_t rss = static_cast<uint64_t>(s.kill.rss_mb) * kMiB;
  if (gpu > 0 && f.gpu_reserved_bytes > gpu) {
    return Over("gpu reserved", f.gpu_reserved_bytes, gpu, "hard");
  }
  if (rss > 0 && f.rss_bytes > rss) return Over("rss", f.rss_bytes, rss, "hard");
  uint64_t timeout_ms = static_cast<uint64_t>(s.hang_timeout_s * 1000);
  if (f.busy && f.heartbeat_ms > 0 && now_ms > f.heartbeat_ms + timeout_ms) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "no heartbeat for %.1f s (hang_timeout_s %.1f)",
                  static_cast<double>(now_ms - f.heartbeat_ms) / 1000.0, s.hang_timeout_s);
    return std::string(buf);
  }
  return std::nullopt;
}

}  // namespace framemill
