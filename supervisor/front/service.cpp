#include "supervisor/front/service.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <ctime>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
#include "supervisor/front/gpu_scheduler.h"
#include "supervisor/front/job_end_hook.h"
#include "common/shared_memory.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/process/subprocess.h"
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

// A running job's figures for the metrics, from its latest progress report.
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
  uint64_t updated_ms = 0;  // when fps and workers were last taken
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
  uint64_t period_ms() const { return period_ms_; }  // 0: systemd asked for no watchdog

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

// Test hook: FRAMEMILL_TEST_GPU_LABELS=1 makes the service's GPUs (config service_gpus) labels:
// jobs are scheduled on them as on GPUs, also jobs on the CPU, but their workers run on the
// device the job names and are not pinned. Lets the queue be tested where there is no GPU; never
// set it in production.
bool GpuLabelsOnly() {
  const char* v = std::getenv("FRAMEMILL_TEST_GPU_LABELS");
  return v != nullptr && std::string(v) == "1";
}

// Idle workers the service keeps loaded between jobs, on one set of GPUs (or on the job's own
// device when the service has no GPU set). A running job holds the place it was given.
struct WarmSlot {
  WarmWorkers warm;
  std::vector<int> gpus;  // the service GPUs its workers are on
  std::string model;      // the model file the last job using it named
  bool in_use = false;
};

// A claimed job the service has not started yet: what it asks of the GPU set.
struct QueuedJob {
  std::string id;
  bool needs_gpus = false;  // takes service GPUs (the service has some and the job is no CPU job)
  // Resumed after the supervisor died while it ran (its `starts` above 0; an orderly stop
  // lowers it): it runs alone, so that a crash it causes again is charged to it only.
  bool alone = false;
  GpuAsk ask;
  bool waiting_logged = false;
};

// A thread that runs the service's jobs one after another and lives as long as the service.
// Jobs do not get threads of their own because a worker dies with the thread that started it
// (the worker's PR_SET_PDEATHSIG follows the parent thread, not the process): warm workers a job
// leaves behind must outlive that job's thread.
class JobThread {
 public:
  JobThread() : thread_([this] { Loop(); }) {}
  ~JobThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  bool busy() {
    std::lock_guard<std::mutex> lock(mu_);
    return task_ != nullptr;
  }
  void Run(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = std::move(task);
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return quit_ || task_ != nullptr; });
      if (task_ == nullptr) return;  // quit with nothing to do
      std::function<void()> task = task_;
      lock.unlock();
      task();
      lock.lock();
      task_ = nullptr;
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool quit_ = false;
  std::thread thread_;  // last: started once the rest is made
};

// One spare worker's place (config spare_workers): a service GPU, or, without a GPU set, the
// jobs' own device (-1). Its spare is started by the service's loop thread, which outlives every
// job (a worker dies with the thread that started it), and is lent to each job that runs there.
struct SparePlace {
  int gpu_label = -1;    // the service GPU it stands for; -1 = none (no GPU set)
  int gpu = -1;          // the GPU its spare is pinned to; -1 = not pinned (no GPU set, or labels)
  // Its spare runs on the CPU: the next one starts when the job that took one ends, not while it
  // runs (a spare's start, about a second of CPU, would compete with the job for the cores).
  bool cpu = false;
  std::string log_dir;   // spare-K-GEN.log, and the workers' logs of jobs on this GPU alone
  std::unique_ptr<WorkerPool> pool;  // its spare, if started; null while a job holds it
  bool held = false;     // a running job holds it (RunningJob::spares)
  // Set by the holding job's thread when its first worker took the spare: the loop then starts
  // the next one at once, while the job runs.
  std::atomic<bool> taken{false};
  int failures = 0;      // spares that exited by themselves, in a row
  uint64_t generations = 0;  // spares started here: each pool's log names count on from it
  uint64_t next_try_ms = 0;  // none is started before this (after failures)
};

// A job running on one of the service's job threads.
struct RunningJob {
  std::string id;
  std::vector<int> gpus;  // the service GPUs it holds
  bool cpu = false;       // a CPU job beside GPU jobs (the service has a GPU set)
  bool alone = false;     // nothing starts beside it (QueuedJob::alone)
  WarmSlot* slot = nullptr;
  std::string log_dir;    // its workers' logs: one folder per warm place
  // The spares of the places it runs on, lent for its first workers (JobOptions::spares) and
  // given back when it ends: by place, the pool (null when the place had no spare ready).
  std::vector<std::pair<SparePlace*, std::unique_ptr<WorkerPool>>> spares;
  std::atomic<bool> ended{false};
  // When it last showed life (launched, or a progress report): the watchdog is fed only while
  // every running job has.
  std::atomic<uint64_t> alive_ms{0};
};

class Service {
 public:
  Service(const Config& config, const std::atomic<bool>& stop)
      : config_(config), stop_(stop), spool_(config.spool_dir), requests_(spool_, config) {}

  Status Run();

 private:
  // Takes the next job: an active one not yet run by this process (a resume or a retry), else
  // the first waiting one that can be claimed. Entries of incoming/ that are no job file are
  // set aside on the way. Returns "" when there is none. Under spool_mu_.
  std::string NextJob();
  // Starts as many queued jobs as the GPUs (or, without a GPU set, one at a time) allow, in queue
  // order; the head that cannot start yet waits, and nothing behind it starts.
  void StartJobs();
  // What a claimed job asks of the GPU set (its job file; a job that cannot be read asks nothing
  // and fails on its thread).
  QueuedJob Queue(const std::string& id);
  // The warm place a job on `gpus` runs with; idle places on any of those GPUs are stopped first
  // (their workers hold GPU memory the job needs).
  WarmSlot* TakeWarmSlot(const std::vector<int>& gpus, const std::string& model);
  void Launch(const QueuedJob& q, const std::vector<int>& gpus, bool cpu);
  bool AnyRunning(bool RunningJob::*flag) const;  // a running job with `flag` set
  // Joins the jobs that ended, giving back their GPUs and warm places. True when any ended.
  bool Reap();
  // Tells the watchdog the loop is alive, but only while every running job has shown life
  // within the watchdog's period: a job stuck without progress still gets the service
  // restarted, as when the loop itself ran the job.
  void FeedWatchdog();
  // The running jobs: a cancel marks them; the queue's head, claimed but not running, is filed
  // at once by a cancel (StartJobs then lets it go).
  std::set<std::string> RunningIds() const;
  // Runs the claimed job `id` with every exception from its handling caught: such a job is
  // filed as failed with the exception's text. On its own thread.
  void RunContained(RunningJob* job);
  void RunClaimed(RunningJob* job);
  // Files `id` under done/ or failed/; a job that cannot be filed stays in active/ and is not
  // taken again by this process.
  void File(const std::string& id, bool ok, const nlohmann::json& result);
  void FileFailed(const std::string& id, const nlohmann::json& result) { File(id, false, result); }
  void SetAside(const SpoolEntry& e, const Status& why);
  // Runs the config's on_job_end hook for a job just filed under `state` (done | failed).
  void JobEnded(const std::string& id, SpoolState state);
  // Waits up to `max_ms` for a spool change, a job's end or the stop.
  void WaitForWork(int inotify_fd, uint64_t max_ms);
  void Housekeeping();
  // The spare places (config spare_workers), made once at start.
  void MakeSparePlaces();
  // Starts a spare on every place that has none and is not held by a job (once a failed one's
  // pause is over), and notes spares that exited. On the loop's thread, every pass.
  void KeepSpares();
  // Gives back a job's spares to their places; a place's spare taken by the job is started
  // again by KeepSpares.
  void ReturnSpares(RunningJob* job);
  // The workers' log folder for jobs on `gpus` (made 0750 when missing), as Launch names it.
  std::string WorkerLogDir(const std::vector<int>& gpus, bool cpu);
  // Metrics (supervisor/report/metrics.h): finds the file's path and writes the first file; then
  // rewrites it from the counts of ended runs, the running jobs' figures and the spool. A failed
  // write is logged once until a write succeeds again; it never stops the service.
  void StartMetrics();
  void WriteMetrics(bool up = true);
  // Takes a progress report of running job `id`; `attempts` holds the counts of its attempts
  // that ended. Writes the file when kMetricsIntervalMs passed since the last write.
  void NoteProgress(const std::string& id, const JobProgress& p, uint64_t run_ms,
                    const std::vector<DispatchStats>& attempts);
  // Takes the worker counts of the job's ended attempts (JobOptions::attempt_dispatch). Under
  // metrics_mu_.
  void AttemptEnded(LiveJob* live, const std::vector<DispatchStats>& attempts);
  // Adds job `id`'s counts to the service's totals (every frame of its plan when it
  // `finished`) and forgets its live figures.
  void EndRun(const std::string& id, const std::vector<DispatchStats>& attempts, bool finished);

  const Config& config_;
  const std::atomic<bool>& stop_;
  const bool gpu_labels_ = GpuLabelsOnly();
  // The spool, the request handler and the sets below; recursive: filing a job writes the
  // metrics, which count the spool.
  std::recursive_mutex spool_mu_;
  Spool spool_;
  RequestHandler requests_;
  Watchdog watchdog_;
  const std::string fault_abort_ = FaultAbortNeedle();
  std::set<std::string> unfiled_;  // jobs left in active/ because they could not be filed
  // incoming/ entries that could not be claimed nor moved aside (name, inode): logged once,
  // then skipped until they change.
  std::set<std::pair<std::string, uint64_t>> stuck_;
  uint64_t last_housekeeping_ms_ = 0;
  // The loop's own state (its thread only): the queue's head, the running jobs, the free GPUs
  // and the warm places.
  std::optional<QueuedJob> head_;
  std::list<std::unique_ptr<RunningJob>> running_;
  std::set<int> free_gpus_;
  std::atomic<int64_t> gpus_free_{0};  // free_gpus_.size(), for the metrics (any thread)
  std::list<WarmSlot> warm_;  // a list: running jobs hold pointers into it
  std::list<SparePlace> spare_places_;  // a list: running jobs hold pointers into it
  std::atomic<int64_t> spares_waiting_{0};  // live spares at their places, for the metrics
  std::list<JobThread> threads_;  // as many as jobs ran at once; they end with the service
  int wake_fds_[2] = {-1, -1};  // a job's thread writes a byte when it ends
  // Metrics, written from the loop and the jobs' threads.
  std::mutex metrics_mu_;
  std::string metrics_path_;  // "" = no metrics
  MetricsFigures totals_;     // counters of the runs that ended; version and start time
  std::map<std::string, LiveJob> live_;
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
  SpoolCounts c;
  {
    std::lock_guard<std::recursive_mutex> spool_lock(spool_mu_);
    c = spool_.Count();
  }
  std::lock_guard<std::mutex> lock(metrics_mu_);
  last_metrics_ms_ = MonotonicMs();
  MetricsFigures f = totals_;
  f.up = up;
  f.jobs_incoming = c.incoming;
  f.jobs_active = c.active;
  f.jobs_done = c.done;
  f.jobs_failed = c.failed;
  f.gpus_free = gpus_free_.load();
  f.gpus_busy = static_cast<int64_t>(config_.service_gpus.size()) - f.gpus_free;
  f.spare_workers = spares_waiting_.load();
  if (c.oldest_incoming_ns > 0) {
    const double submitted_s = static_cast<double>(c.oldest_incoming_ns) / 1e9;
    f.oldest_waiting_age_s = std::max(0.0, WallSeconds() - submitted_s);
  }
  for (const auto& [id, live] : live_) {  // the running jobs, summed
    f.frames_processed += live.frames;
    f.job_fps += live.fps;
    AddCounts(live.events, &f.worker_events);
    f.workers.insert(f.workers.end(), live.workers.begin(), live.workers.end());
  }
  Status s = WriteMetricsFile(metrics_path_, RenderMetrics(f));
  if (!s.ok() && !metrics_failing_) {
    spdlog::warn("metrics: {} (said once until a write works again)", s.message());
  }
  metrics_failing_ = !s.ok();
}

void Service::NoteProgress(const std::string& id, const JobProgress& p, uint64_t run_ms,
                           const std::vector<DispatchStats>& attempts) {
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    LiveJob& live = live_[id];
    if (attempts.size() != live.attempts_ended) AttemptEnded(&live, attempts);  // a retry runs
    if (live.frames_resumed < 0) live.frames_resumed = p.frames_resumed;  // the first report
    live.frames = std::max<int64_t>(0, p.frames_done - live.frames_resumed);
    live.frames_total = p.frames_total;
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
    if (now - last_metrics_ms_ < kMetricsIntervalMs) return;
  }
  WriteMetrics();
}

void Service::AttemptEnded(LiveJob* live, const std::vector<DispatchStats>& attempts) {
  live->attempts_ended = attempts.size();
  live->ended_attempts.clear();
  for (const DispatchStats& d : attempts) AddCounts(EventCounts(d), &live->ended_attempts);
  live->events = live->ended_attempts;
  live->events_seen = -1;
}

void Service::EndRun(const std::string& id, const std::vector<DispatchStats>& attempts,
                     bool finished) {
  std::lock_guard<std::mutex> lock(metrics_mu_);
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
  if (::pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status(StatusCode::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  free_gpus_.insert(config_.service_gpus.begin(), config_.service_gpus.end());
  gpus_free_.store(static_cast<int64_t>(free_gpus_.size()));
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
  if (!config_.service_gpus.empty()) {
    spdlog::info("sharing GPUs {} among the jobs{}", GpuListText(config_.service_gpus),
                 gpu_labels_ ? " (test hook FRAMEMILL_TEST_GPU_LABELS: labels only, workers "
                               "not pinned)"
                             : "");
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
  MakeSparePlaces();
  sd_notify(0, "READY=1\nSTATUS=idle");
  while (!stop_.load()) {
    try {
      FeedWatchdog();
      Housekeeping();
      Reap();
      KeepSpares();
      std::vector<std::string> filed;  // cancelled before they ran: ended here, unlocked
      try {
        std::lock_guard<std::recursive_mutex> lock(spool_mu_);
        filed = requests_.Poll(RunningIds());
      } catch (const std::exception& e) {  // the spool's own files; never a reason to stop
        spdlog::error("reading the spool's requests: {}", e.what());
      }
      for (const std::string& id : filed) JobEnded(id, SpoolState::kFailed);
      const size_t before = running_.size();
      StartJobs();
      const bool idle = running_.empty() && !head_;
      if (idle) {
        sd_notify(0, "STATUS=idle");
        WriteMetrics();  // the queue as this pass found it
      }
      if (running_.size() > before) continue;  // more may start (another share, a CPU job)
      // While jobs run, requests (cancel) are read four times a second.
      WaitForWork(inotify_fd,
                  idle ? static_cast<uint64_t>(config_.rescan_interval_s * 1000) : 250);
    } catch (const std::exception& e) {
      // A thread that cannot be made, a spool that cannot be read: the running jobs go on, and
      // so does the loop, a second later.
      spdlog::error("the service loop: {}; trying again in a second", e.what());
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  // Stopping: every running job sees the stop at its next progress report and ends with its
  // finished segments in active/; a queued one stays there as it is.
  while (!running_.empty()) {
    FeedWatchdog();
    if (!Reap()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (inotify_fd >= 0) ::close(inotify_fd);
  sd_notify(0, "STOPPING=1");
  for (WarmSlot& slot : warm_) slot.warm.Stop(5000);
  for (SparePlace& place : spare_places_) {
    if (place.pool != nullptr) place.pool->StopAll(2000);
  }
  spare_places_.clear();
  threads_.clear();  // after the warm workers they started have stopped
  WriteMetrics(/*up=*/false);
  ::close(wake_fds_[0]);
  ::close(wake_fds_[1]);
  spdlog::info("stopped");
  return Status::Ok();
}

std::set<std::string> Service::RunningIds() const {
  std::set<std::string> ids;
  for (const auto& job : running_) ids.insert(job->id);
  return ids;
}

QueuedJob Service::Queue(const std::string& id) {
  QueuedJob q;
  q.id = id;
  if (FILE* f = std::fopen((spool_.JobDir(SpoolState::kActive, id) + "/starts").c_str(), "re")) {
    int starts = 0;
    q.alone = std::fscanf(f, "%d", &starts) == 1 && starts > 0;
    std::fclose(f);
  }
  if (config_.service_gpus.empty()) return q;
  Result<JobSpec> job =
      LoadJobFile(spool_.JobDir(SpoolState::kActive, id) + "/job.json", config_.defaults);
  if (!job.ok()) return q;  // fails on its thread, saying why
  q.needs_gpus = gpu_labels_ || job->settings.device.kind != DeviceKind::kCpu;
  q.ask.gpus = job->settings.gpus;
  q.ask.model = job->model;
  return q;
}

void Service::StartJobs() {
  const bool gpu_set = !config_.service_gpus.empty();
  while (!stop_.load()) {
    if (AnyRunning(&RunningJob::alone)) return;
    if (!head_) {
      if (!gpu_set && !running_.empty()) return;  // one job at a time
      if (gpu_set && free_gpus_.empty() && AnyRunning(&RunningJob::cpu)) {
        return;  // nothing could start: claim nothing yet
      }
      std::string id;
      try {
        std::lock_guard<std::recursive_mutex> lock(spool_mu_);
        id = NextJob();
      } catch (const std::exception& e) {  // the spool's own files; never a reason to stop
        spdlog::error("reading the spool: {}", e.what());
      }
      if (id.empty()) return;
      head_ = Queue(id);
    }
    QueuedJob& q = *head_;
    if (!IsDirectory(spool_.JobDir(SpoolState::kActive, q.id))) {
      spdlog::info("job {} left the queue while it waited (cancelled)", q.id);
      head_.reset();
      continue;
    }
    if (q.alone && !running_.empty()) return;  // once the running jobs end
    if (!gpu_set) {
      Launch(q, {}, /*cpu=*/false);
    } else if (!q.needs_gpus) {
      // A CPU job beside the GPU jobs: one at a time (it takes the host's cores).
      if (AnyRunning(&RunningJob::cpu)) return;
      Launch(q, {}, /*cpu=*/true);
    } else if (!CheckGpuAsk(config_.service_gpus, q.ask).ok()) {
      Launch(q, {}, /*cpu=*/false);  // its thread fails it, saying which GPUs there are
    } else {
      std::vector<WarmPlace> places;
      for (const WarmSlot& w : warm_) {
        if (!w.in_use && w.warm.pool != nullptr) places.push_back({w.gpus, w.model});
      }
      int waiting = 1;  // the head, those in incoming/, and those in active/ to resume
      {
        std::lock_guard<std::recursive_mutex> lock(spool_mu_);
        waiting += static_cast<int>(spool_.Count().incoming);
        const std::set<std::string> running = RunningIds();
        for (const SpoolEntry& e : spool_.Active()) {
          if (e.id != q.id && running.count(e.id) == 0 && unfiled_.count(e.id) == 0) ++waiting;
        }
      }
      // A job resuming alone takes every free GPU: nothing else runs beside it.
      std::vector<int> gpus = ChooseGpus(free_gpus_, q.ask, q.alone ? 1 : waiting, places);
      if (gpus.empty()) {
        if (!q.waiting_logged) {
          q.waiting_logged = true;
          // What `framemill list` and `status` show for it until it starts.
          (void)AtomicWriteFile(
              spool_.JobDir(SpoolState::kActive, q.id) + "/progress.json",
              DumpJson({{"id", q.id}, {"waiting_for_gpus", q.ask.gpus}}) + "\n");
          spdlog::info("job {} waits for GPUs {} (free: {})", q.id,
                       q.ask.gpus.empty() ? std::string("(any)") : GpuListText(q.ask.gpus),
                       GpuListText(std::vector<int>(free_gpus_.begin(), free_gpus_.end())));
        }
        return;
      }
      Launch(q, gpus, /*cpu=*/false);
    }
    head_.reset();
  }
}

WarmSlot* Service::TakeWarmSlot(const std::vector<int>& gpus, const std::string& model) {
  WarmSlot* mine = nullptr;
  for (auto it = warm_.begin(); it != warm_.end();) {
    WarmSlot& w = *it;
    const bool overlaps = std::any_of(gpus.begin(), gpus.end(), [&](int g) {
      return std::find(w.gpus.begin(), w.gpus.end(), g) != w.gpus.end();
    });
    if (!w.in_use && mine == nullptr && w.gpus == gpus) {
      mine = &w;
    } else if (!w.in_use && overlaps) {
      // Idle workers on GPUs this job takes: their memory is the job's now.
      if (w.warm.pool != nullptr) {
        spdlog::info("stopping the idle workers on GPUs {} for the next job", GpuListText(w.gpus));
        w.warm.Stop(5000);
      }
    }
    if (!w.in_use && &w != mine && w.warm.pool == nullptr) {
      it = warm_.erase(it);
    } else {
      ++it;
    }
  }
  if (mine == nullptr) {
    warm_.emplace_back();
    mine = &warm_.back();
    mine->gpus = gpus;
  }
  mine->model = model;
  mine->in_use = true;
  return mine;
}

void Service::Launch(const QueuedJob& q, const std::vector<int>& gpus, bool cpu) {
  JobThread* thread = nullptr;
  for (JobThread& t : threads_) {
    if (!t.busy()) {
      thread = &t;
      break;
    }
  }
  if (thread == nullptr) thread = &threads_.emplace_back();  // may throw: nothing taken yet
  auto job = std::make_unique<RunningJob>();
  job->id = q.id;
  job->gpus = gpus;
  job->cpu = cpu;
  job->alone = q.alone;
  job->alive_ms.store(MonotonicMs());
  job->slot = TakeWarmSlot(gpus, q.ask.model);
  job->log_dir = WorkerLogDir(gpus, cpu);
  // Lent: the spares of its GPUs (without a GPU set, the one place), a CPU job beside GPU jobs
  // none.
  for (SparePlace& place : spare_places_) {
    const bool mine = config_.service_gpus.empty()
                          ? true
                          : !cpu && std::find(gpus.begin(), gpus.end(), place.gpu_label) != gpus.end();
    if (!mine || place.held) continue;
    place.held = true;
    job->spares.emplace_back(&place, std::move(place.pool));
  }
  for (int g : gpus) free_gpus_.erase(g);
  gpus_free_.store(static_cast<int64_t>(free_gpus_.size()));
  if (!gpus.empty()) spdlog::info("job {} on GPUs {}", q.id, GpuListText(gpus));
  if (q.waiting_logged) {  // no longer waiting: "starting" until its first progress
    ::unlink((spool_.JobDir(SpoolState::kActive, q.id) + "/progress.json").c_str());
  }
  if (q.alone && !config_.service_gpus.empty()) {
    spdlog::info("job {} was running when the supervisor died: it resumes alone", q.id);
  }
  RunningJob* raw = job.get();
  running_.push_back(std::move(job));
  thread->Run([this, raw] {
    RunContained(raw);
    raw->ended.store(true);
    const char byte = 1;
    (void)!::write(wake_fds_[1], &byte, 1);
  });
}

bool Service::AnyRunning(bool RunningJob::*flag) const {
  return std::any_of(running_.begin(), running_.end(), [&](const auto& j) { return (*j).*flag; });
}

void Service::FeedWatchdog() {
  const uint64_t now = MonotonicMs(), period = watchdog_.period_ms();
  for (const auto& job : running_) {
    if (period > 0 && !job->ended.load() && now - job->alive_ms.load() >= period) return;
  }
  watchdog_.Alive();
}

std::string Service::WorkerLogDir(const std::vector<int>& gpus, bool cpu) {
  // Workers number their logs per pool (worker-K-GEN.log): jobs running at once log into
  // folders of their own, one per warm place.
  std::string dir = spool_.Dir("workers");
  if (config_.service_gpus.empty()) return dir;
  std::string name = cpu || gpus.empty() ? "cpu" : "gpus";
  for (int g : gpus) name += "-" + std::to_string(g);
  dir += "/" + name;
  if (!IsDirectory(dir)) {
    Status made = MakeDirectories(dir);
    if (made.ok() && ::chmod(dir.c_str(), 0750) != 0) {
      made = Status(StatusCode::kIo, std::string("chmod: ") + std::strerror(errno));
    }
    if (!made.ok()) spdlog::warn("cannot create {}: {}", dir, made.message());
  }
  return dir;
}

void Service::MakeSparePlaces() {
  if (!config_.spare_workers || config_.backend != Backend::kLocal) return;
  std::vector<int> labels = config_.service_gpus;
  if (labels.empty()) labels.push_back(-1);
  for (int label : labels) {
    SparePlace& place = spare_places_.emplace_back();
    place.gpu_label = label;
    place.gpu = gpu_labels_ ? -1 : label;
    const DeviceKind kind = config_.defaults.device.kind;
    place.cpu = place.gpu < 0 && (kind == DeviceKind::kCpu ||
                                  (kind == DeviceKind::kAuto && !HostHasNvidiaDriver()));
    place.log_dir = WorkerLogDir(label >= 0 ? std::vector<int>{label} : std::vector<int>(), false);
  }
}

void Service::KeepSpares() {
  const uint64_t now = MonotonicMs();
  for (SparePlace& place : spare_places_) {
    // Lent to a job: left alone until the job has taken its spare; then the next one starts
    // (on the CPU, once the job has ended).
    if (place.held && place.pool == nullptr && (!place.taken.exchange(false) || place.cpu)) {
      continue;
    }
    if (place.pool != nullptr) {
      for (const WorkerExit& e : place.pool->ReapExited()) {
        const std::string tail = e.StderrLine();
        ++place.failures;
        const uint64_t pause_s = std::min<uint64_t>(600, 5ull << std::min(place.failures, 7));
        place.next_try_ms = now + pause_s * 1000;
        spdlog::warn("the spare worker{} exited: {}{}; the next in {} s",
                     place.gpu_label >= 0 ? " of GPU " + std::to_string(place.gpu_label) : "",
                     e.Describe(), tail.empty() ? "" : " (its log ends: " + tail + ")", pause_s);
      }
      if (place.pool->Alive(0)) continue;
    }
    if (now < place.next_try_ms) continue;
    if (place.pool == nullptr) {
      WorkerOptions opts;
      opts.worker_binary = WorkerBinaryPath(config_.worker_binary);
      opts.device = config_.defaults.device;
      opts.log_level = config_.log_level;
      opts.log_dir = place.log_dir;
      opts.pytorch_alloc_conf = config_.pytorch_alloc_conf;
      opts.sandbox = config_.worker_sandbox.value_or(WorkerSandbox::kAuto);
      Result<std::unique_ptr<WorkerPool>> pool =
          WorkerPool::CreateSpares(opts, 1, place.generations);
      if (!pool.ok()) {
        spdlog::warn("no spare worker: {}", pool.status().message());
        place.next_try_ms = now + 600 * 1000;
        continue;
      }
      place.pool = std::move(*pool);
    }
    Status started = place.pool->Spawn(0, place.gpu);
    if (!started.ok()) {
      spdlog::warn("cannot start a spare worker: {}", started.message());
      place.next_try_ms = now + 600 * 1000;
      continue;
    }
    place.generations = place.pool->Generation(0);
    spdlog::info("spare worker started{} (pid {}), its device made ready for the next job",
                 place.gpu_label >= 0 ? " for GPU " + std::to_string(place.gpu_label) : "",
                 place.pool->Pid(0));
  }
  int64_t waiting = 0;
  for (const SparePlace& place : spare_places_) {
    waiting += place.pool != nullptr && place.pool->Alive(0) ? 1 : 0;
  }
  spares_waiting_.store(waiting);
}

void Service::ReturnSpares(RunningJob* job) {
  for (auto& [place, pool] : job->spares) {
    place->held = false;
    place->taken.store(false);
    if (place->pool != nullptr) {
      // The place has its next spare (started once the job took this one): the lent pool goes.
      if (pool != nullptr) pool->StopAll(2000);
      continue;
    }
    if (pool != nullptr && !pool->Alive(0)) {
      // Taken by the job (or exited: reaped and counted by KeepSpares, as at the place).
      bool exited = false;
      for (const WorkerExit& e : pool->ReapExited()) {
        exited = true;
        spdlog::warn("a spare worker exited while lent to job {}: {}", job->id, e.Describe());
      }
      if (!exited) place->failures = 0;
    }
    place->pool = std::move(pool);
  }
  job->spares.clear();
}

bool Service::Reap() {
  bool any = false;
  for (auto it = running_.begin(); it != running_.end();) {
    RunningJob& job = **it;
    if (!job.ended.load()) {
      ++it;
      continue;
    }
    ReturnSpares(&job);
    for (int g : job.gpus) free_gpus_.insert(g);
    gpus_free_.store(static_cast<int64_t>(free_gpus_.size()));
    job.slot->in_use = false;
    it = running_.erase(it);
    any = true;
  }
  return any;
}

void Service::Housekeeping() {
  uint64_t now = MonotonicMs();
  if (last_housekeeping_ms_ != 0 && now - last_housekeeping_ms_ < 3600 * 1000) return;
  last_housekeeping_ms_ = now;
  std::lock_guard<std::recursive_mutex> lock(spool_mu_);
  int removed = spool_.RemoveOldFailedWork(config_.failed_work_keep_days * 86400.0);
  if (removed > 0) {
    spdlog::info("removed the kept work of {} failed jobs older than {} days", removed,
                 config_.failed_work_keep_days);
  }
}

std::string Service::NextJob() {
  const std::set<std::string> taken = RunningIds();  // (no head: it is being chosen)
  for (const SpoolEntry& e : spool_.Active()) {  // left by a crash or a stop, or retried
    if (unfiled_.count(e.id) == 0 && taken.count(e.id) == 0) {
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
  {
    std::lock_guard<std::recursive_mutex> lock(spool_mu_);
    Status s = spool_.Finish(id, ok, result);
    if (!s.ok()) {
      spdlog::error("job {}: cannot file its result: {}; left in active/", id, s.message());
      unfiled_.insert(id);
      return;
    }
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

void Service::RunContained(RunningJob* job) {
  const std::string& id = job->id;
  std::string what;
  try {
    RunClaimed(job);
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  spdlog::error("job {}: its handling threw: {}", id, what);
  EndRun(id, {}, /*finished=*/false);  // its live figures leave the metrics
  try {
    FileFailed(id, FailureResult(id, StatusCodeName(StatusCode::kInternal),
                                 "the supervisor's handling of this job threw: " + what));
  } catch (const std::exception& e) {
    spdlog::error("job {}: cannot file it: {}", id, e.what());
  }
}

void Service::WaitForWork(int inotify_fd, uint64_t max_ms) {
  uint64_t until = MonotonicMs() + max_ms;
  while (!stop_.load() && MonotonicMs() < until) {
    FeedWatchdog();
    pollfd p[2] = {{wake_fds_[0], POLLIN, 0}, {inotify_fd, POLLIN, 0}};
    const nfds_t count = inotify_fd >= 0 ? 2 : 1;
    const int wait_ms = static_cast<int>(std::min<uint64_t>(200, until - MonotonicMs()));
    if (::poll(p, count, std::max(wait_ms, 1)) <= 0) continue;
    char buf[4096];
    if (p[0].revents != 0) {
      while (::read(wake_fds_[0], buf, sizeof(buf)) > 0) {
      }
    }
    if (count == 2 && p[1].revents != 0) {
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
    }
    return;  // something arrived (or was lost), or a job ended: look again
  }
}

void Service::RunClaimed(RunningJob* running) {
  const std::string& id = running->id;
  const std::vector<int>& gpus = running->gpus;
  std::string dir = spool_.JobDir(SpoolState::kActive, id);
  std::string started = IsoNow();
  // Counted before anything of the job is read: a job whose parsing kills the supervisor counts.
  Result<int> starts = [&] {
    std::lock_guard<std::recursive_mutex> lock(spool_mu_);
    return spool_.RaiseStarts(id);
  }();
  if (!starts.ok()) {
    FileFailed(id, FailureResult(id, starts.status()));
    return;
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
    return;
  }
  Result<Submitter> submitter = JobOwner(dir);
  if (!submitter.ok()) {
    FileFailed(id, FailureResult(id, submitter.status()));
    return;
  }
  Result<JobSpec> job = LoadJobFile(dir + "/job.json", config_.defaults);
  Status allowed = job.ok() ? Status::Ok() : job.status();
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->input, "input");
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->model, "model");
  if (allowed.ok()) allowed = CheckMayWriteOutput(*submitter, job->output, job->overwrite);
  if (allowed.ok() && !config_.service_gpus.empty()) {
    allowed = CheckGpuAsk(config_.service_gpus, {job->settings.gpus, job->model});
  }
  if (!allowed.ok()) {
    spdlog::warn("job {} rejected: {}", id, allowed.ToString());
    nlohmann::json result = FailureResult(id, allowed);
    result["submitter"] = submitter->ToJson();
    (void)RemoveTree(dir + "/work");
    FileFailed(id, result);
    return;
  }
  if (!gpus.empty()) {
    // The GPUs the service gave it: the job's own list, or a share of the free ones, with
    // workers_per_gpu workers on each (else its `workers` spread over them, at least one each).
    JobSettings& s = job->settings;
    const int n = static_cast<int>(gpus.size());
    const int per_gpu =
        s.workers_per_gpu > 0 ? s.workers_per_gpu : std::max(1, (s.workers + n - 1) / n);
    s.workers = std::min(kMaxWorkers, n * per_gpu);
    if (gpu_labels_) {
      s.gpus.clear();  // labels only: the workers run where the job says
    } else {
      s.gpus = gpus;
      if (s.device.kind == DeviceKind::kAuto) s.device = DeviceSetting{DeviceKind::kCuda, -1};
    }
  }
  spdlog::info("job {} for uid {}: {} -> {} with {} (start {} of at most {})", id, submitter->uid,
               job->input, job->output, job->model, *starts, config_.max_job_starts);
  WriteMetrics();  // the job is active
  std::atomic<bool> job_stop{false};
  bool cancelled = false;
  uint64_t last_write = 0, start_ms = MonotonicMs();
  JobOptions options;
  options.workspace = dir + "/work";
  options.timeline = dir + "/timeline.jsonl";
  // active/<id>/ is gone once the job is filed: the report names where the timeline will be.
  options.timeline_filed_done = spool_.JobDir(SpoolState::kDone, id) + "/timeline.jsonl";
  options.timeline_filed_failed = spool_.JobDir(SpoolState::kFailed, id) + "/timeline.jsonl";
  options.warm = &running->slot->warm;
  for (auto& lent : running->spares) {
    if (lent.second != nullptr) options.spares.push_back(lent.second.get());
  }
  options.on_spare_taken = [this, running](WorkerPool* from) {
    for (auto& lent : running->spares) {
      if (lent.second.get() == from) lent.first->taken.store(true);
    }
    const char byte = 1;  // the loop starts the next spare
    (void)!::write(wake_fds_[1], &byte, 1);
  };
  options.worker_log_dir = running->log_dir;
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
    running->alive_ms.store(MonotonicMs());
    NoteProgress(id, p, start_ms, attempts);
    if (!fault_abort_.empty() && id.find(fault_abort_) != std::string::npos) std::abort();
    if (stop_.load()) job_stop.store(true);
    uint64_t now = MonotonicMs();
    if (!cancelled && PathExists(dir + "/cancel")) {
      cancelled = true;
      job_stop.store(true);
    }
    if (now - last_write < 1000) return;
    last_write = now;
    double secs = static_cast<double>(now - start_ms) / 1000.0;
    nlohmann::json progress = ProgressJson(id, p, secs);
    const double fps = progress.value("fps", 0.0);
    if (!gpus.empty()) progress["service_gpus"] = gpus;
    (void)AtomicWriteFile(dir + "/progress.json", DumpJson(progress) + "\n");
    char status[256];
    std::snprintf(status, sizeof(status), "STATUS=job %s: %lld/%lld frames written, %.1f fps",
                  id.c_str(), static_cast<long long>(p.frames_written),
                  static_cast<long long>(p.frames_total), fps);
    sd_notify(0, status);
  };
  Result<JobReport> report = config_.backend == Backend::kSlurm
                                 ? RunOnSlurm(dir + "/job.json", *job, config_, job_stop, options)
                                 : RunJob(*job, config_, job_stop, options);
  if (cancelled && config_.backend == Backend::kSlurm) (void)CancelSlurmJobs(dir + "/job.json");
  EndRun(id, attempts, report.ok());
  if (!report.ok() && report.status().code() == StatusCode::kCancelled && !cancelled) {
    std::lock_guard<std::recursive_mutex> lock(spool_mu_);
    spool_.LowerStarts(id);  // an orderly stop is no crash
    spdlog::info("job {} stopped; its finished segments stay for the next start", id);
    return;
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
  if (!gpus.empty()) result["service_gpus"] = gpus;
  result["submitter"] = submitter->ToJson();
  result["starts"] = *starts;
  File(id, report.ok(), result);
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
