#include "supervisor/service.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <poll.h>
#include <sys/inotify.h>
#include <thread>
#include <unistd.h>

#ifdef FRAMEMILL_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#else
// Without libsystemd the service runs the same and tells nobody.
static int sd_notify(int, const char*) { return 0; }
static int sd_watchdog_enabled(int, uint64_t*) { return 0; }
#endif

#include "common/file_util.h"
#include "common/job_spec.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/shared_memory.h"
#include "supervisor/job_runner.h"
#include "supervisor/spool.h"

namespace framemill {
namespace {

std::string IsoNow() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

nlohmann::json FailureResult(const std::string& id, const Status& s) {
  return {{"version", 1},
          {"id", id},
          {"status", "failed"},
          {"reason", {{"code", StatusCodeName(s.code())}, {"message", s.message()}}},
          {"finished_at", IsoNow()}};
}

// Sends WATCHDOG=1 while the service loop keeps calling Alive(); silent once it stops, so that
// systemd restarts a service whose loop is stuck.
class Watchdog {
 public:
  Watchdog() {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    period_ms_ = usec / 1000;
    thread_ = std::thread([this] { Loop(); });
  }
  ~Watchdog() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  void Alive() { alive_ms_.store(MonotonicMs()); }

 private:
  void Loop() {
    while (!done_.load()) {
      if (MonotonicMs() - alive_ms_.load() < period_ms_) sd_notify(0, "WATCHDOG=1");
      for (uint64_t slept = 0; slept < period_ms_ / 2 && !done_.load(); slept += 50) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  uint64_t period_ms_ = 0;
  std::atomic<uint64_t> alive_ms_{MonotonicMs()};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

class Service {
 public:
  Service(const Config& config, const std::atomic<bool>& stop)
      : config_(config), stop_(stop), spool_(config.spool_dir) {}

  Status Run();

 private:
  // Runs the claimed job `id` to its end; false when the service is stopping and the job was
  // left in active/ to resume.
  bool RunClaimed(const std::string& id);
  void WaitForWork(int inotify_fd);

  const Config& config_;
  const std::atomic<bool>& stop_;
  Spool spool_;
  Watchdog watchdog_;
  WarmWorkers warm_;  // loaded workers kept between jobs that use the same model
};

Status Service::Run() {
  FM_RETURN_IF_ERROR(spool_.Prepare());
  FM_RETURN_IF_ERROR(spool_.Lock());
  int stale = RemoveStaleObjects();
  if (stale > 0) spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  if (config_.allowed_input_roots.empty() || config_.allowed_output_roots.empty() ||
      config_.allowed_model_roots.empty()) {
    spdlog::warn(
        "allowed_input_roots, allowed_output_roots or allowed_model_roots is empty: "
        "jobs may name any path this user can reach");
  }
  int inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd >= 0) {
    inotify_add_watch(inotify_fd, spool_.Dir("incoming").c_str(), IN_MOVED_TO | IN_CLOSE_WRITE);
  } else {
    spdlog::warn("inotify unavailable ({}); rescanning every {} s", std::strerror(errno),
                 config_.rescan_interval_s);
  }
  spdlog::info("serving spool {}", spool_.root());
  sd_notify(0, "READY=1\nSTATUS=idle");
  bool running = true;
  for (const SpoolEntry& e : spool_.Active()) {  // left by a crash or a stop: resume first
    if (!running || stop_.load()) break;
    spdlog::info("resuming job {}", e.id);
    running = RunClaimed(e.id);
  }
  while (running && !stop_.load()) {
    watchdog_.Alive();
    std::vector<SpoolEntry> waiting = spool_.Incoming();
    if (waiting.empty()) {
      sd_notify(0, "STATUS=idle");
      WaitForWork(inotify_fd);
      continue;
    }
    Result<std::string> id = spool_.Claim(waiting.front());
    if (!id.ok()) {
      spdlog::error("cannot claim {}: {}", waiting.front().path, id.status().message());
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    running = RunClaimed(*id);
  }
  if (inotify_fd >= 0) ::close(inotify_fd);
  sd_notify(0, "STOPPING=1");
  if (warm_.pool != nullptr) warm_.pool->StopAll(5000);
  warm_.pool.reset();
  spdlog::info("stopped");
  return Status::Ok();
}

void Service::WaitForWork(int inotify_fd) {
  uint64_t until = MonotonicMs() + static_cast<uint64_t>(config_.rescan_interval_s * 1000);
  while (!stop_.load() && MonotonicMs() < until) {
    watchdog_.Alive();
    if (inotify_fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    pollfd p{inotify_fd, POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) {
      char buf[4096];
      bool overflow = false;
      ssize_t n;
      while ((n = ::read(inotify_fd, buf, sizeof(buf))) > 0) {
        for (char* q = buf; q < buf + n;) {
          auto* ev = reinterpret_cast<inotify_event*>(q);
          overflow = overflow || (ev->mask & IN_Q_OVERFLOW);
          q += sizeof(inotify_event) + ev->len;
        }
      }
      if (overflow) spdlog::warn("inotify queue overflow; rescanning");
      return;  // something arrived (or was lost): rescan
    }
  }
}

bool Service::RunClaimed(const std::string& id) {
  std::string dir = spool_.JobDir("active", id);
  std::string started = IsoNow();
  Result<JobSpec> job = LoadJobFile(dir + "/job.json", config_.defaults);
  if (!job.ok()) {
    spdlog::warn("job {} rejected: {}", id, job.status().ToString());
    Status s = spool_.Finish(id, false, FailureResult(id, job.status()));
    if (!s.ok()) spdlog::error("job {}: {}", id, s.message());
    return true;
  }
  spdlog::info("job {}: {} -> {} with {}", id, job->input, job->output, job->model);
  std::atomic<bool> job_stop{false};
  bool cancelled = false;
  uint64_t last_write = 0, start_ms = MonotonicMs();
  JobOptions options;
  options.workspace = dir + "/work";
  options.timeline = dir + "/timeline.jsonl";
  options.warm = &warm_;
  options.worker_log_dir = spool_.Dir("workers");
  options.on_progress = [&](const JobProgress& p) {
    watchdog_.Alive();
    if (stop_.load()) job_stop.store(true);
    if (!cancelled && PathExists(dir + "/cancel")) {
      cancelled = true;
      job_stop.store(true);
    }
    uint64_t now = MonotonicMs();
    if (now - last_write < 1000) return;
    last_write = now;
    double secs = static_cast<double>(now - start_ms) / 1000.0;
    double fps = secs > 0 ? static_cast<double>(p.frames_done) / secs : 0.0;
    nlohmann::json progress = {{"id", id},
                               {"frames_done", p.frames_done},
                               {"frames_total", p.frames_total},
                               {"segments_done", p.segments_done},
                               {"segments_total", p.segments_total},
                               {"elapsed_s", secs},
                               {"fps", fps},
                               {"workers", nlohmann::json::array()}};
    for (const WorkerSnapshot& w : p.workers) {
      progress["workers"].push_back(
          {{"worker", w.worker},
           {"gen", w.generation},
           {"pid", w.pid},
           {"frames", w.frames},
           {"rss_mb", static_cast<double>(w.rss_bytes) / (1 << 20)},
           {"gpu_reserved_mb", static_cast<double>(w.gpu_reserved_bytes) / (1 << 20)}});
    }
    (void)AtomicWriteFile(dir + "/progress.json", progress.dump() + "\n");
    char status[256];
    std::snprintf(status, sizeof(status), "STATUS=job %s: %lld/%lld frames, %.1f fps", id.c_str(),
                  static_cast<long long>(p.frames_done), static_cast<long long>(p.frames_total),
                  fps);
    sd_notify(0, status);
  };
  Result<JobReport> report = RunJob(*job, config_, job_stop, options);
  if (!report.ok() && report.status().code() == StatusCode::kCancelled && !cancelled) {
    spdlog::info("job {} stopped; its finished segments stay for the next start", id);
    return false;
  }
  nlohmann::json result;
  if (report.ok()) {
    const JobReport& r = *report;
    int recycles = 0;
    for (const auto& [reason, n] : r.dispatch.recycles) recycles += n;
    result = {{"version", 1},
              {"id", id},
              {"status", "done"},
              {"output", r.output},
              {"frames", r.frames},
              {"seconds", r.seconds},
              {"started_at", started},
              {"finished_at", IsoNow()},
              {"workers_started", r.dispatch.workers_started},
              {"recycles", recycles},
              {"recycles_by_reason", r.dispatch.recycles},
              {"crashes", r.dispatch.crashes},
              {"kills", r.dispatch.kills},
              {"chunk_retries", r.dispatch.chunk_retries},
              {"segments", r.segments},
              {"segments_resumed", r.segments_resumed},
              {"stages", r.stages.ToJson()},
              {"worker_input_format", r.worker_input_format},
              {"worker_start", r.dispatch.StartupFigures()},
              {"faults", r.FaultsJson()}};
    (void)RemoveTree(options.workspace);  // the output is complete; segments are not needed
    spdlog::info("job {} done: {} frames in {:.1f} s", id, r.frames, r.seconds);
  } else {
    Status s = cancelled ? Status(StatusCode::kCancelled, "cancelled by request") : report.status();
    result = FailureResult(id, s);
    result["started_at"] = started;
    // A full disk keeps the finished segments (free space and resubmit); anything else clears
    // its temporary files.
    if (s.code() != StatusCode::kNoSpace) (void)RemoveTree(options.workspace);
    spdlog::warn("job {} failed: {}", id, s.ToString());
  }
  Status s = spool_.Finish(id, report.ok(), result);
  if (!s.ok()) spdlog::error("job {}: cannot file its result: {}", id, s.message());
  return true;
}

}  // namespace

Status RunService(const Config& config, const std::atomic<bool>& stop) {
  Service service(config, stop);
  return service.Run();
}

}  // namespace framemill
