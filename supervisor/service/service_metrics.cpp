#include "supervisor/service/service_metrics.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/mutex.h"

namespace framemill {
namespace {

double WallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A job's worker counts so far, by event and reason.
WorkerEventCounts EventCounts(const DispatchStats& d) {
  WorkerEventCounts c;
  for (const auto& [reason, n] : d.recycles) c[WorkerEvent::kRecycle][reason] += n;
  for (const auto& [reason, n] : d.crashes_by_reason) c[WorkerEvent::kCrash][reason] += n;
  for (const auto& [reason, n] : d.kills_by_reason) c[WorkerEvent::kKill][reason] += n;
  return c;
}

void AddCounts(const WorkerEventCounts& from, WorkerEventCounts* to) {
  for (const auto& [event, by_reason] : from) {
    for (const auto& [reason, n] : by_reason) (*to)[event][reason] += n;
  }
}

}  // namespace

ServiceMetrics::ServiceMetrics(int64_t service_gpus, std::function<SpoolCounts()> count_spool)
    : service_gpus_(service_gpus), count_spool_(std::move(count_spool)) {}

void ServiceMetrics::Start(const std::string& metrics_textfile, const std::string& root) {
  {
    MutexLock lock(&mu_);
    totals_.version = FRAMEMILL_VERSION;
    totals_.start_time_s = WallSeconds();
  }
  const std::string& file = metrics_textfile;
  if (file.empty()) return;
  path_ = file.front() == '/' ? file : root + "/" + file;
  const std::string dir = DirName(path_);
  if (!IsDirectory(dir)) {
    Status made = MakeDirectories(dir);
    // World-readable whatever the umask: the node exporter runs as another user.
    if (made.ok() && ::chmod(dir.c_str(), 0755) != 0) {
      made = Status(StatusCode::kIo, std::string("chmod: ") + std::strerror(errno));
    }
    if (!made.ok()) spdlog::warn("metrics: cannot create {}: {}", dir, made.message());
  }
  spdlog::info("writing metrics to {}", path_);
  Write();
}

MetricsFigures ServiceMetrics::Figures(const SpoolCounts& c, bool up) const {
  MutexLock lock(&mu_);
  return FiguresLocked(c, up);
}

MetricsFigures ServiceMetrics::FiguresLocked(const SpoolCounts& c, bool up) const {
  MetricsFigures f = totals_;
  f.up = up;
  f.jobs_incoming = c.incoming;
  f.jobs_active = c.active;
  f.jobs_done = c.done;
  f.jobs_failed = c.failed;
  f.gpus_free = gpus_free_.load();
  f.gpus_busy = service_gpus_ - f.gpus_free;
  f.spare_workers = spares_waiting_.load();
  f.spool_full = spool_full_.load();
  if (c.oldest_incoming_ns > 0) {
    const double submitted_s = static_cast<double>(c.oldest_incoming_ns) / 1e9;
    f.oldest_waiting_age_s = std::max(0.0, WallSeconds() - submitted_s);
  }
  for (const auto& [id, live] : live_) {  // the running jobs, summed
    f.frames_processed += live.frames;
    f.job_fps += live.fps;
    if (live.waiting_for_space) ++f.jobs_waiting_for_space;
    AddCounts(live.events, &f.worker_events);
    f.workers.insert(f.workers.end(), live.workers.begin(), live.workers.end());
  }
  return f;
}

void ServiceMetrics::Write(bool up) {
  if (path_.empty()) return;
  const SpoolCounts c = count_spool_();
  MutexLock lock(&mu_);
  last_write_ms_ = MonotonicMs();
  Status s = WriteMetricsFile(path_, RenderMetrics(FiguresLocked(c, up)));
  if (!s.ok() && !failing_) {
    spdlog::warn("metrics: {} (said once until a write works again)", s.message());
  }
  failing_ = !s.ok();
}

void ServiceMetrics::NoteProgress(const std::string& id, const JobProgress& p, uint64_t run_ms,
                                  const std::vector<DispatchStats>& attempts) {
  {
    MutexLock lock(&mu_);
    LiveJob& live = live_[id];
    if (attempts.size() != live.attempts_ended) AttemptEnded(&live, attempts);  // a retry runs
    if (live.frames_resumed < 0) live.frames_resumed = p.frames_resumed;  // the first report
    live.frames = std::max<int64_t>(0, p.frames_done - live.frames_resumed);
    live.frames_total = p.frames_total;
    live.waiting_for_space = !p.waiting.empty();
    if (p.dispatch != nullptr) {
      int seen = p.dispatch->crashes + p.dispatch->kills + TotalRecycles(*p.dispatch);
      if (seen != live.events_seen) {  // maps are rebuilt only when a count changed
        live.events_seen = seen;
        live.events = live.ended_attempts;
        AddCounts(EventCounts(*p.dispatch), &live.events);
      }
    }
    uint64_t now = MonotonicMs();
    if (now - live.updated_ms >= kMetricsIntervalMs / 2) {  // each job's own figures, fresh
      live.updated_ms = now;
      double secs = static_cast<double>(now - run_ms) / 1000.0;
      live.fps = secs > 0 ? static_cast<double>(live.frames) / secs : 0.0;
      live.workers.clear();
      for (const WorkerSnapshot& w : p.workers) {
        live.workers.push_back({w.worker, w.device, w.rss_bytes, w.gpu_reserved_bytes});
      }
    }
    if (now - last_write_ms_ < kMetricsIntervalMs) return;
  }
  Write();
}

void ServiceMetrics::AttemptEnded(LiveJob* live, const std::vector<DispatchStats>& attempts) {
  live->attempts_ended = attempts.size();
  live->ended_attempts.clear();
  for (const DispatchStats& d : attempts) AddCounts(EventCounts(d), &live->ended_attempts);
  live->events = live->ended_attempts;
  live->events_seen = -1;
}

void ServiceMetrics::EndRun(const std::string& id, const std::vector<DispatchStats>& attempts,
                            bool finished) {
  MutexLock lock(&mu_);
  LiveJob& live = live_[id];
  AttemptEnded(&live, attempts);
  if (finished && live.frames_total > 0) {
    // Every frame of the plan went through the model, less those an earlier start finished.
    live.frames = live.frames_total - std::max<int64_t>(0, live.frames_resumed);
  }
  totals_.frames_processed += live.frames;
  AddCounts(live.events, &totals_.worker_events);
  live_.erase(id);
}

}  // namespace framemill
