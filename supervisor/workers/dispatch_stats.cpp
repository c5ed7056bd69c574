#include "supervisor/workers/dispatch_stats.h"

#include <algorithm>

#include <fmt/format.h>

namespace framemill {

std::map<std::string, double> DispatchStats::StartupFigures() const {
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  double ready_max = ready_s.empty() ? 0.0 : *std::max_element(ready_s.begin(), ready_s.end());
  return {
      {"ready_median_ms", 1000 * median(ready_s)},
      {"ready_max_ms", 1000 * ready_max},
      {"first_chunk_median_ms", 1000 * median(first_chunk_s)},
      {"later_chunk_mean_ms", later_chunks > 0 ? 1000 * later_chunk_s_sum / later_chunks : 0.0}};
}

double DispatchStats::WorkerBusySeconds() const {
  double s = later_chunk_s_sum;
  for (double first : first_chunk_s) s += first;
  return s;
}

std::string DispatchStats::StartupSummary() const {
  std::map<std::string, double> f = StartupFigures();
  return fmt::format(
      "spawn to ready median {:.0f} ms (max {:.0f}); first chunk median {:.0f} ms, "
      "later chunks {:.0f} ms",
      f["ready_median_ms"], f["ready_max_ms"], f["first_chunk_median_ms"],
      f["later_chunk_mean_ms"]);
}

void DispatchStats::Count(const RecycleVerdict& v) {
  if (v.action == RecycleAction::kKill) {
    ++kills;
    ++kills_by_reason[Name(v.limit)];
    if (v.limit == RecycleLimit::kProtocol) ++protocol_violations;
  } else if (v.action == RecycleAction::kRecycle) {
    ++recycles[Name(v.limit)];
  }
}

void DispatchStats::CountFallbacks(uint32_t events, uint32_t per_call, uint32_t tile) {
  fallback_events += events;
  if (per_call != 0 && (fallback_per_call == 0 || per_call < fallback_per_call)) {
    fallback_per_call = per_call;
  }
  if (tile != 0 && (fallback_tile == 0 || tile < fallback_tile)) fallback_tile = tile;
}

void DispatchStats::CountChunk(double busy_s, bool first) {
  if (first) {
    first_chunk_s.push_back(busy_s);
  } else {
    later_chunk_s_sum += busy_s;
    ++later_chunks;
  }
}

void DispatchStats::RaisePeak(size_t index, const WorkerSnapshot& now) {
  if (index >= peaks.size()) return;
  WorkerSnapshot& p = peaks[index];
  if (now.pid != 0) p.pid = now.pid;
  p.frames = std::max(p.frames, now.frames);
  p.rss_bytes = std::max(p.rss_bytes, now.rss_bytes);
  p.gpu_reserved_bytes = std::max(p.gpu_reserved_bytes, now.gpu_reserved_bytes);
}

void DispatchStats::CountCrash(bool signaled) {
  ++crashes;
  ++crashes_by_reason[signaled ? "signal" : "exit"];
}

}  // namespace framemill
