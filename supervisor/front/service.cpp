#include "supervisor/front/service.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
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
#include "common/job_file.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "supervisor/front/job_end_hook.h"
#include "common/shared_memory.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/report/job_result.h"
#include "supervisor/report/metrics.h"
#include "supervisor/front/slurm_backend.h"
#include "supervisor/front/spool.h"
#include "supervisor/front/spool_requests.h"
#include "supervisor/front/submitter.h"

namespace framemill {
namespace {

// result.json of a job that failed now (job_result.h).
nlohmann::json FailureResult(const std::string& id, const std::string& code,
                             const std::string& message) {
  nlohmann::json result = FailedResultJson(id, code, message);
  result["finished_at"] = IsoNow();
  return result;
}

nlohmann::json FailureResult(const std::string& id, const Status& s) {
  return FailureResult(id, StatusCodeName(s.code()), s.message());
}

// The reason code of a job whose handling crashed or killed the supervisor max_job_starts
// times (no StatusCode: the job never ends with it, the service files it so).
constexpr const char* kCrashedCode = "crashed";

// Test hook: FRAMEMILL_FAULT_SUPERVISOR_ABORT=<text> makes the supervisor abort() while it runs
// a job whose id contains <text> (at the job's first progress report), as a crash in the job's
// handling would. Tests use it to prove the crash count; never set it in production.
std::string FaultAbortNeedle() {
  const char* v = std::getenv("FRAMEMILL_FAULT_SUPERVISOR_ABORT");
  return v != nullptr ? v : "";
}

double WallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The metrics file is rewritten this often while a job runs (besides each state change).
constexpr uint64_t kMetricsIntervalMs = 2000;

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

// The running job's figures for the metrics, from its latest progress report.
struct LiveJob {
  int64_t frames = 0;           // through the model since this start of the job
  int64_t frames_resumed = -1;  // finished by an earlier start (-1: no report yet)
  int64_t frames_total = 0;     // the job's, resumed ones included
  double fps = 0;
  int events_seen = -1;  // the running attempt's crashes + kills + recycles in `events`
  size_t attempts_ended = 0;
  WorkerEventCounts ended_attempts;  // counts of the job's ended attempts (crash retries)
  WorkerEventCounts events;          // those and the running attempt's
  std::vector<WorkerMemory> workers;
};

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
      : config_(config), stop_(stop), spool_(config.spool_dir), requests_(spool_, config) {}

  Status Run();

 private:
  // Takes the next job: an active one not yet run by this process (a resume or a retry), else
  // the first waiting one that can be claimed. Entries of incoming/ that are no job file are
  // set aside on the way. Returns "" when there is none.
  std::string NextJob();
  // Runs the claimed job `id` with every exception from its handling caught: such a job is
  // filed as failed with the exception's text. False when the service is stopping and the job
  // was left in active/ to resume.
  bool RunContained(const std::string& id);
  bool RunClaimed(const std::string& id);
  // Files `id` under done/ or failed/; a job that cannot be filed stays in active/ and is not
  // taken again by this process.
  void File(const std::string& id, bool ok, const nlohmann::json& result);
  void FileFailed(const std::string& id, const nlohmann::json& result) { File(id, false, result); }
  void SetAside(const SpoolEntry& e, const Status& why);
  // Runs the config's on_job_end hook for a job just filed under `state` (done | failed).
  void JobEnded(const std::string& id, SpoolState state);
  void WaitForWork(int inotify_fd);
  void Housekeeping();
  // Metrics (supervisor/report/metrics.h): finds the file's path and writes the first file; then
  // rewrites it from the counts of ended runs, the running job's figures and the spool. A failed
  // write is logged once until a write succeeds again; it never stops the service.
  void StartMetrics();
  void WriteMetrics(bool up = true);
  // Takes a progress report of the running job; `attempts` holds the counts of its attempts
  // that ended. Writes the file when kMetricsIntervalMs passed since the last write.
  void NoteProgress(const JobProgress& p, uint64_t run_ms,
                    const std::vector<DispatchStats>& attempts);
  // Takes the worker counts of the job's ended attempts (JobOptions::attempt_dispatch).
  void AttemptEnded(const std::vector<DispatchStats>& attempts);
  // Adds the running job's counts to the service's totals (every frame of its plan when it
  // `finished`) and clears them.
  void EndRun(bool finished);

  const Config& config_;
  const std::atomic<bool>& stop_;
  Spool spool_;
  RequestHandler requests_;
  Watchdog watchdog_;
  WarmWorkers warm_;  // loaded workers kept between jobs that use the same model
  const std::string fault_abort_ = FaultAbortNeedle();
  std::set<std::string> unfiled_;  // jobs left in active/ because they could not be filed
  // incoming/ entries that could not be claimed nor moved aside (name, inode): logged once,
  // then skipped until they change.
  std::set<std::pair<std::string, uint64_t>> stuck_;
  uint64_t last_housekeeping_ms_ = 0;
  std::string metrics_path_;  // "" = no metrics
  MetricsFigures totals_;     // counters of the runs that ended; version and start time
  LiveJob live_;
  uint64_t last_metrics_ms_ = 0;
  bool metrics_failing_ = false;
};

void Service::StartMetrics() {
  totals_.version = FRAMEMILL_VERSION;
  totals_.start_time_s = WallSeconds();
  const std::string& file = config_.metrics_textfile;
  if (file.empty()) return;
  metrics_path_ = file.front() == '/' ? file : spool_.root() + "/" + file;
  const std::string dir = DirName(metrics_path_);
  if (!IsDirectory(dir)) {
    Status made = MakeDirectories(dir);
    // World-readable whatever the umask: the node exporter runs as another user.
    if (made.ok() && ::chmod(dir.c_str(), 0755) != 0) {
      made = Status(StatusCode::kIo, std::string("chmod: ") + std::strerror(errno));
    }
    if (!made.ok()) spdlog::warn("metrics: cannot create {}: {}", dir, made.message());
  }
  spdlog::info("writing metrics to {}", metrics_path_);
  WriteMetrics();
}

void Service::WriteMetrics(bool up) {
  if (metrics_path_.empty()) return;
  last_metrics_ms_ = MonotonicMs();
  MetricsFigures f = totals_;
  f.up = up;
  const SpoolCounts c = spool_.Count();
  f.jobs_incoming = c.incoming;
  f.jobs_active = c.active;
  f.jobs_done = c.done;
  f.jobs_failed = c.failed;
  if (c.oldest_incoming_ns > 0) {
    const double submitted_s = static_cast<double>(c.oldest_incoming_ns) / 1e9;
    f.oldest_waiting_age_s = std::max(0.0, WallSeconds() - submitted_s);
  }
  f.frames_processed += live_.frames;
  f.job_fps = live_.fps;
  AddCounts(live_.events, &f.worker_events);
  f.workers = live_.workers;
  Status s = WriteMetricsFile(metrics_path_, RenderMetrics(f));
  if (!s.ok() && !metrics_failing_) {
    spdlog::warn("metrics: {} (said once until a write works again)", s.message());
  }
  metrics_failing_ = !s.ok();
}

void Service::NoteProgress(const JobProgress& p, uint64_t run_ms,
                           const std::vector<DispatchStats>& attempts) {
  if (attempts.size() != live_.attempts_ended) AttemptEnded(attempts);    // a crash retry runs
  if (live_.frames_resumed < 0) live_.frames_resumed = p.frames_resumed;  // the job's first report
  live_.frames = std::max<int64_t>(0, p.frames_done - live_.frames_resumed);
  live_.frames_total = p.frames_total;
  if (p.dispatch != nullptr) {
    int seen = p.dispatch->crashes + p.dispatch->kills + TotalRecycles(*p.dispatch);
    if (seen != live_.events_seen) {  // maps are rebuilt only when a count changed
      live_.events_seen = seen;
      live_.events = live_.ended_attempts;
      AddCounts(EventCounts(*p.dispatch), &live_.events);
    }
  }
  uint64_t now = MonotonicMs();
  if (now - last_metrics_ms_ < kMetricsIntervalMs) return;
  double secs = static_cast<double>(now - run_ms) / 1000.0;
  live_.fps = secs > 0 ? static_cast<double>(live_.frames) / secs : 0.0;
  live_.workers.clear();
  for (const WorkerSnapshot& w : p.workers) {
    live_.workers.push_back({w.worker, w.device, w.rss_bytes, w.gpu_reserved_bytes});
  }
  WriteMetrics();
}

void Service::AttemptEnded(const std::vector<DispatchStats>& attempts) {
  live_.attempts_ended = attempts.size();
  live_.ended_attempts.clear();
  for (const DispatchStats& d : attempts) AddCounts(EventCounts(d), &live_.ended_attempts);
  live_.events = live_.ended_attempts;
  live_.events_seen = -1;
}

void Service::EndRun(bool finished) {
  if (finished && live_.frames_total > 0) {
    // Every frame of the plan went through the model, less those an earlier start finished.
    live_.frames = live_.frames_total - std::max<int64_t>(0, live_.frames_resumed);
  }
  totals_.frames_processed += live_.frames;
  AddCounts(live_.events, &totals_.worker_events);
  live_ = LiveJob{};
}

Status Service::Run() {
  if (!config_.allow_any_path &&
      (config_.allowed_input_roots.empty() || config_.allowed_output_roots.empty() ||
       config_.allowed_model_roots.empty())) {
    return Status(StatusCode::kInvalidConfig,
                  "allowed_input_roots, allowed_output_roots and allowed_model_roots must each "
                  "name a directory for framemill serve (or set \"allow_any_path\": true)");
  }
  FM_RETURN_IF_ERROR(spool_.Prepare());
  FM_RETURN_IF_ERROR(spool_.Lock());
  StartMetrics();
  int stale = RemoveStaleObjects();
  if (stale > 0) spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  if (config_.allowed_input_roots.empty() || config_.allowed_output_roots.empty() ||
      config_.allowed_model_roots.empty()) {
    spdlog::warn(
        "allow_any_path: allowed_input_roots, allowed_output_roots or allowed_model_roots is "
        "empty: jobs may name any path this user can reach");
  }
  if (!fault_abort_.empty()) {
    spdlog::warn("test hook FRAMEMILL_FAULT_SUPERVISOR_ABORT set: aborting on jobs matching {}",
                 fault_abort_);
  }
  int inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd >= 0) {
    for (const std::string& dir : {spool_.Dir(SpoolState::kIncoming), spool_.Dir("requests")}) {
      inotify_add_watch(inotify_fd, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE);
    }
  } else {
    spdlog::warn("inotify unavailable ({}); rescanning every {} s", std::strerror(errno),
                 config_.rescan_interval_s);
  }
  spdlog::info("serving spool {}", spool_.root());
  sd_notify(0, "READY=1\nSTATUS=idle");
  bool running = true;
  while (running && !stop_.load()) {
    watchdog_.Alive();
    Housekeeping();
    std::string id;
    try {
      id = NextJob();
    } catch (const std::exception& e) {  // the spool's own files; never a reason to stop
      spdlog::error("reading the spool: {}", e.what());
    }
    if (id.empty()) {
      sd_notify(0, "STATUS=idle");
      WriteMetrics();  // the queue as this pass found it
      WaitForWork(inotify_fd);
      continue;
    }
    running = RunContained(id);
  }
  if (inotify_fd >= 0) ::close(inotify_fd);
  sd_notify(0, "STOPPING=1");
  if (warm_.pool != nullptr) warm_.pool->StopAll(5000);
  warm_.pool.reset();
  WriteMetrics(/*up=*/false);
  spdlog::info("stopped");
  return Status::Ok();
}

void Service::Housekeeping() {
  uint64_t now = MonotonicMs();
  if (last_housekeeping_ms_ != 0 && now - last_housekeeping_ms_ < 3600 * 1000) return;
  last_housekeeping_ms_ = now;
  int removed = spool_.RemoveOldFailedWork(config_.failed_work_keep_days * 86400.0);
  if (removed > 0) {
    spdlog::info("removed the kept work of {} failed jobs older than {} days", removed,
                 config_.failed_work_keep_days);
  }
}

std::string Service::NextJob() {
  requests_.Poll("");
  for (const SpoolEntry& e : spool_.Active()) {  // left by a crash or a stop, or retried
    if (unfiled_.count(e.id) == 0) {
      spdlog::info("resuming job {}", e.id);
      return e.id;
    }
  }
  for (const SpoolEntry& e : spool_.Incoming()) {
    if (stuck_.count({e.path, e.inode}) != 0) continue;
    Result<ClaimedJob> claimed = spool_.Claim(e);
    if (!claimed.ok() && claimed.status().code() == StatusCode::kInvalidJob) {
      SetAside(e, claimed.status());
      continue;
    }
    if (!claimed.ok()) {
      spdlog::error("cannot claim {}: {}; skipped until it changes", e.path,
                    claimed.status().message());
      stuck_.insert({e.path, e.inode});
      continue;
    }
    if (claimed->id.empty()) continue;  // vanished (or replaced, and filed)
    return claimed->id;
  }
  return "";
}

void Service::SetAside(const SpoolEntry& e, const Status& why) {
  Result<std::string> id = spool_.SetAside(e, FailureResult(e.id, why));
  if (id.ok()) {
    spdlog::warn("{} set aside as failed/{}: {}", e.path, *id, why.message());
    JobEnded(*id, SpoolState::kFailed);
  } else {
    spdlog::error("{}: {}; and it cannot be moved aside ({}): skipped until it changes", e.path,
                  why.message(), id.status().message());
    stuck_.insert({e.path, e.inode});
  }
}

void Service::File(const std::string& id, bool ok, const nlohmann::json& result) {
  Status s = spool_.Finish(id, ok, result);
  if (!s.ok()) {
    spdlog::error("job {}: cannot file its result: {}; left in active/", id, s.message());
    unfiled_.insert(id);
    return;
  }
  JobEnded(id, ok ? SpoolState::kDone : SpoolState::kFailed);
}

void Service::JobEnded(const std::string& id, SpoolState state) {
  WriteMetrics();
  if (config_.on_job_end.empty()) return;
  Status hook = RunJobEndHook({config_.on_job_end, config_.on_job_end_timeout_s},
                              {id, state, spool_.JobDir(state, id)});
  if (!hook.ok()) spdlog::warn("job {}: {}", id, hook.message());
}

bool Service::RunContained(const std::string& id) {
  std::string what;
  try {
    return RunClaimed(id);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  spdlog::error("job {}: its handling threw: {}", id, what);
  try {
    FileFailed(id, FailureResult(id, StatusCodeName(StatusCode::kInternal),
                                 "the supervisor's handling of this job threw: " + what));
  } catch (const std::exception& e) {
    spdlog::error("job {}: cannot file it: {}", id, e.what());
  }
  return true;
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
  std::string dir = spool_.JobDir(SpoolState::kActive, id);
  std::string started = IsoNow();
  // Counted before anything of the job is read: a job whose parsing kills the supervisor counts.
  Result<int> starts = spool_.RaiseStarts(id);
  if (!starts.ok()) {
    FileFailed(id, FailureResult(id, starts.status()));
    return true;
  }
  if (*starts > config_.max_job_starts) {
    std::string message = "the supervisor crashed or was killed while running this job " +
                          std::to_string(*starts - 1) + " times; not resumed again";
    spdlog::error("job {}: {}", id, message);
    // Its finished segments stay (a crash is retryable: framemill retry).
    nlohmann::json result = FailureResult(id, kCrashedCode, message);
    result["work_kept"] = config_.failed_work_keep_days > 0;
    result["starts"] = *starts - 1;
    if (config_.failed_work_keep_days <= 0) (void)RemoveTree(dir + "/work");
    FileFailed(id, result);
    return true;
  }
  Result<Submitter> submitter = JobOwner(dir);
  if (!submitter.ok()) {
    FileFailed(id, FailureResult(id, submitter.status()));
    return true;
  }
  Result<JobSpec> job = LoadJobFile(dir + "/job.json", config_.defaults);
  Status allowed = job.ok() ? Status::Ok() : job.status();
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->input, "input");
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->model, "model");
  if (allowed.ok()) allowed = CheckMayWriteOutput(*submitter, job->output, job->overwrite);
  if (!allowed.ok()) {
    spdlog::warn("job {} rejected: {}", id, allowed.ToString());
    nlohmann::json result = FailureResult(id, allowed);
    result["submitter"] = submitter->ToJson();
    (void)RemoveTree(dir + "/work");
    FileFailed(id, result);
    return true;
  }
  spdlog::info("job {} for uid {}: {} -> {} with {} (start {} of at most {})", id, submitter->uid,
               job->input, job->output, job->model, *starts, config_.max_job_starts);
  WriteMetrics();  // the job is active
  std::atomic<bool> job_stop{false};
  bool cancelled = false;
  uint64_t last_write = 0, last_requests = 0, start_ms = MonotonicMs();
  JobOptions options;
  options.workspace = dir + "/work";
  options.timeline = dir + "/timeline.jsonl";
  options.warm = &warm_;
  options.worker_log_dir = spool_.Dir("workers");
  options.output_reader_uid = submitter->uid;
  std::vector<DispatchStats> attempts;  // worker counts of each ended attempt, for the metrics
  options.attempt_dispatch = &attempts;
  JobReportFile report_file;
  options.report_file = &report_file;
  // The report beside the output replaces a file there only where the submitter could.
  const Status report_allowed =
      CheckMayWriteOutput(*submitter, job->output + ".report.html", /*overwrite=*/true);
  options.write_report = report_allowed.ok();
  options.on_progress = [&](const JobProgress& p) {
    watchdog_.Alive();
    NoteProgress(p, start_ms, attempts);
    if (!fault_abort_.empty() && id.find(fault_abort_) != std::string::npos) std::abort();
    if (stop_.load()) job_stop.store(true);
    uint64_t now = MonotonicMs();
    if (now - last_requests >= 250) {
      last_requests = now;
      requests_.Poll(id);
    }
    if (!cancelled && PathExists(dir + "/cancel")) {
      cancelled = true;
      job_stop.store(true);
    }
    if (now - last_write < 1000) return;
    last_write = now;
    double secs = static_cast<double>(now - start_ms) / 1000.0;
    double fps = FramesPerSecond(p.frames_done, secs);
    (void)AtomicWriteFile(dir + "/progress.json", DumpJson(ProgressJson(id, p, secs)) + "\n");
    char status[256];
    std::snprintf(status, sizeof(status), "STATUS=job %s: %lld/%lld frames, %.1f fps", id.c_str(),
                  static_cast<long long>(p.frames_done), static_cast<long long>(p.frames_total),
                  fps);
    sd_notify(0, status);
  };
  Result<JobReport> report = config_.backend == Backend::kSlurm
                                 ? RunOnSlurm(dir + "/job.json", *job, config_, job_stop, options)
                                 : RunJob(*job, config_, job_stop, options);
  AttemptEnded(attempts);
  if (cancelled && config_.backend == Backend::kSlurm) (void)CancelSlurmJobs(dir + "/job.json");
  EndRun(report.ok());
  if (!report.ok() && report.status().code() == StatusCode::kCancelled && !cancelled) {
    spool_.LowerStarts(id);  // an orderly stop is no crash
    spdlog::info("job {} stopped; its finished segments stay for the next start", id);
    return false;
  }
  nlohmann::json result;
  if (report.ok()) {
    const JobReport& r = *report;
    result = DoneResultJson(id, r, started, IsoNow());
    (void)RemoveTree(options.workspace);  // the output is complete; segments are not needed
    spdlog::info("job {} done: {} frames in {:.1f} s", id, r.frames, r.seconds);
  } else {
    Status s = cancelled ? Status(StatusCode::kCancelled, "cancelled by request") : report.status();
    result = FailureResult(id, s);
    result["started_at"] = started;
    // A failure that a retry may mend keeps the finished segments for `framemill retry` (for
    // failed_work_keep_days); anything else clears them now.
    bool keep = RetryableReason(StatusCodeName(s.code())) && config_.failed_work_keep_days > 0;
    if (!keep) (void)RemoveTree(options.workspace);
    result["work_kept"] = keep;
    spdlog::warn("job {} failed: {}", id, s.ToString());
  }
  if (!report_file.path.empty()) result["report"] = report_file.path;
  if (!report_allowed.ok()) {
    result["warnings"].push_back("job report not written: " + report_allowed.message());
  } else if (!report.ok() && !report_file.warning.empty()) {  // a finished job's has it already
    result["warnings"].push_back(report_file.warning);
  }
  result["submitter"] = submitter->ToJson();
  result["starts"] = *starts;
  File(id, report.ok(), result);
  return true;
}

}  // namespace

Status RunService(const Config& config, const std::atomic<bool>& stop) {
  try {
    Service service(config, stop);
    return service.Run();
  } catch (const std::exception& e) {  // outside any job: the spool or the system failed
    return Status(StatusCode::kInternal, std::string("the service failed: ") + e.what());
  }
}

}  // namespace framemill
