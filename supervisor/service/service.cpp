#include "supervisor/service/service.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <poll.h>
#include <sys/inotify.h>
#include <thread>
#include <unistd.h>

#include "common/clock.h"
#include "common/env_knobs.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/proc_status.h"
#include "common/shared_memory.h"
#include "supervisor/service/gpu_scheduler.h"
#include "supervisor/service/job_progress_sink.h"
#include "supervisor/service/systemd_notify.h"

namespace framemill {
namespace {

// Test hook: FRAMEMILL_TEST_GPU_LABELS=1 makes the service's GPUs (config service_gpus) labels:
// jobs are scheduled on them as on GPUs, also jobs on the CPU, but their workers run on the
// device the job names and are not pinned. Lets the queue be tested where there is no GPU; never
// set it in production.
bool GpuLabelsOnly() {
  return KnobIsOne(EnvKnob::kTestGpuLabels);
}

}  // namespace

Service::Service(const Config& config, const std::atomic<bool>& stop)
    : config_(config),
      stop_(stop),
      gpu_labels_(GpuLabelsOnly()),
      spool_(config, [this] { metrics_.Write(); }),
      metrics_(static_cast<int64_t>(config.service_gpus.size()), [this] { return spool_.Count(); }),
      job_context_{config, stop, gpu_labels_, spool_, metrics_, [this] { slots_.Wake(); }},
      cache_(config, gpu_labels_, spool_.Dir("workers")),
      gpus_(config.service_gpus) {}

// ---- the loop ----

Status Service::Run() {
  FM_RETURN_IF_ERROR(Open());
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
  cache_.MakeSparePlaces();
  NotifySystemd("READY=1\nSTATUS=idle");
  while (!stop_.load()) {
    try {
      Pass(inotify_fd);
    } catch (const std::exception& e) {
      // A thread that cannot be made, a spool that cannot be read: the running jobs go on, and
      // so does the loop, a second later.
      spdlog::error("the service loop: {}; trying again in a second", e.what());
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  Close(inotify_fd);
  return Status::Ok();
}

Status Service::Open() {
  if (!config_.allow_any_path &&
      (config_.allowed_input_roots.empty() || config_.allowed_output_roots.empty() ||
       config_.allowed_model_roots.empty())) {
    return Status(StatusCode::kInvalidConfig,
                  "allowed_input_roots, allowed_output_roots and allowed_model_roots must each "
                  "name a directory for framemill serve (or set \"allow_any_path\": true)");
  }
  FM_RETURN_IF_ERROR(spool_.Open());
  FM_RETURN_IF_ERROR(slots_.Open());
  metrics_.NoteGpusFree(static_cast<int64_t>(gpus_.free().size()));
  metrics_.Start(config_.metrics_textfile, spool_.root());
  int stale = RemoveStaleObjects();
  if (stale > 0) spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  if (config_.allowed_input_roots.empty() || config_.allowed_output_roots.empty() ||
      config_.allowed_model_roots.empty()) {
    spdlog::warn(
        "allow_any_path: allowed_input_roots, allowed_output_roots or allowed_model_roots is "
        "empty: jobs may name any path this user can reach");
  }
  if (!config_.service_gpus.empty()) {
    spdlog::info("sharing GPUs {} among the jobs{}", GpuListText(config_.service_gpus),
                 gpu_labels_ ? " (test hook FRAMEMILL_TEST_GPU_LABELS: labels only, workers "
                               "not pinned)"
                             : "");
  }
  return Status::Ok();
}

void Service::Pass(int inotify_fd) {
  FeedWatchdog();
  Housekeeping();
  Reap();
  metrics_.NoteSparesWaiting(cache_.Keep());
  spool_.PollRequests(slots_.Ids());
  metrics_.NoteSpoolFull(spool_.full());
  const size_t before = slots_.size();
  StartJobs();
  const bool idle = slots_.empty() && !head_;
  if (idle) {
    NotifySystemd("STATUS=idle");
    metrics_.Write();  // the queue as this pass found it
  }
  if (slots_.size() > before) return;  // more may start (another share, a CPU job)
  // While jobs run, requests (cancel) are read four times a second.
  WaitForWork(inotify_fd, idle ? static_cast<uint64_t>(config_.rescan_interval_s * 1000) : 250);
}

void Service::Close(int inotify_fd) {
  // Stopping: every running job sees the stop at its next progress report and ends with its
  // finished segments in active/; a queued one stays there as it is.
  while (!slots_.empty()) {
    FeedWatchdog();
    if (!Reap()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (inotify_fd >= 0) ::close(inotify_fd);
  NotifySystemd("STOPPING=1");
  cache_.Stop();
  slots_.JoinThreads();  // after the warm workers they started have stopped
  metrics_.Write(/*up=*/false);
  spdlog::info("stopped");
}

void Service::StartJobs() {
  const bool gpu_set = !config_.service_gpus.empty();
  while (!stop_.load()) {
    const RunningView running{slots_.size(), slots_.AnyAlone(), slots_.AnyCpu()};
    if (running.alone) return;  // nothing starts beside a job running alone
    if (!head_) {
      if (!MayClaim(gpu_set, !gpus_.free().empty(), running)) return;
      const std::string id = spool_.ClaimNext(slots_.Ids());
      if (id.empty()) return;
      head_ = ReadQueuedJob(id, spool_.JobDir(SpoolState::kActive, id), config_, gpu_labels_);
    }
    QueuedJob& q = *head_;
    if (!IsDirectory(spool_.JobDir(SpoolState::kActive, q.id))) {
      spdlog::info("job {} left the queue while it waited (cancelled)", q.id);
      head_.reset();
      continue;
    }
    const HeadDecision d =
        DecideHead(q, config_.service_gpus, gpus_.free(), running,
                   [&] { return spool_.CountWaiting(q.id, slots_.Ids()); }, cache_.IdlePlaces());
    if (d.kind == HeadDecision::Kind::kWait) return;
    if (d.kind == HeadDecision::Kind::kWaitForGpus) {
      SayWaiting(&q);
      return;
    }
    Launch(q, d.gpus, d.cpu);
    head_.reset();
  }
}

void Service::SayWaiting(QueuedJob* q) {
  if (q->waiting_logged) return;
  q->waiting_logged = true;
  // What `framemill list` and `status` show for it until it starts.
  const std::string dir = spool_.JobDir(SpoolState::kActive, q->id);
  (void)AtomicWriteFile(dir + "/progress.json",
                        DumpJson({{"id", q->id}, {"waiting_for_gpus", q->ask.gpus}}) + "\n", -1,
                        Spool::SubmitterOf(dir));
  const std::set<int>& free = gpus_.free();
  spdlog::info("job {} waits for GPUs {} (free: {})", q->id,
               q->ask.gpus.empty() ? std::string("(any)") : GpuListText(q->ask.gpus),
               GpuListText(std::vector<int>(free.begin(), free.end())));
}

void Service::Launch(const QueuedJob& q, const std::vector<int>& gpus, bool cpu) {
  JobThread* thread = slots_.FreeThread();  // may throw: nothing taken yet
  auto job = std::make_unique<RunningJob>();
  job->id = q.id;
  job->gpus = gpus;
  job->cpu = cpu;
  job->alone = q.alone;
  job->alive_ms.store(MonotonicMs());
  job->workers = cache_.Take(gpus, cpu, q.ask.model);
  gpus_.Take(gpus);
  metrics_.NoteGpusFree(static_cast<int64_t>(gpus_.free().size()));
  if (!gpus.empty()) spdlog::info("job {} on GPUs {}", q.id, GpuListText(gpus));
  if (q.waiting_logged) {  // no longer waiting: "starting" until its first progress
    ::unlink((spool_.JobDir(SpoolState::kActive, q.id) + "/progress.json").c_str());
  }
  if (q.alone && !config_.service_gpus.empty()) {
    spdlog::info("job {} was running when the supervisor died: it resumes alone", q.id);
  }
  slots_.Start(thread, std::move(job),
               [this](RunningJob* running) { SpoolJobRun(job_context_, running).Run(); });
}

bool Service::Reap() {
  std::vector<std::unique_ptr<RunningJob>> ended = slots_.TakeEnded();
  for (const auto& job : ended) {
    cache_.Return(&job->workers, job->id);
    gpus_.Give(job->gpus);
    metrics_.NoteGpusFree(static_cast<int64_t>(gpus_.free().size()));
  }
  if (!ended.empty() && slots_.empty()) ReturnFreedMemory();
  return !ended.empty();
}

// A job's plan, probe, timeline and face table are freed when it ends, but glibc keeps freed
// heap pages for later: without a trim an idle service held what its biggest job needed.
void Service::ReturnFreedMemory() {
  const uint64_t before = ReadProcMemory().private_bytes;
  ::malloc_trim(0);
  const uint64_t after = ReadProcMemory().private_bytes;
  spdlog::debug("no job running: memory returned to the system, {} -> {} MiB", before >> 20,
                after >> 20);
}

void Service::FeedWatchdog() {
  const uint64_t stall_ms = static_cast<uint64_t>(config_.job_stall_timeout_s * 1000.0);
  for (const std::string& id : slots_.StopStalled(stall_ms)) {
    spdlog::error("job {}: no life for {:.0f} s (job_stall_timeout_s): stopped; it is filed as "
                  "failed (timed_out) when it ends",
                  id, config_.job_stall_timeout_s);
  }
  watchdog_.Feed(slots_.AliveTimes(), stall_ms + kStalledJobGraceMs);
}

void Service::Housekeeping() {
  uint64_t now = MonotonicMs();
  if (last_housekeeping_ms_ != 0 && now - last_housekeeping_ms_ < 3600 * 1000) return;
  last_housekeeping_ms_ = now;
  spool_.RemoveOldFailedWork();
}

void Service::WaitForWork(int inotify_fd, uint64_t max_ms) {
  uint64_t until = MonotonicMs() + max_ms;
  while (!stop_.load() && MonotonicMs() < until) {
    FeedWatchdog();
    pollfd p[2] = {{slots_.wake_fd(), POLLIN, 0}, {inotify_fd, POLLIN, 0}};
    const nfds_t count = inotify_fd >= 0 ? 2 : 1;
    const int wait_ms = static_cast<int>(std::min<uint64_t>(200, until - MonotonicMs()));
    if (::poll(p, count, std::max(wait_ms, 1)) <= 0) continue;
    if (p[0].revents != 0) slots_.DrainWake();
    if (count == 2 && p[1].revents != 0) {
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
    }
    return;  // something arrived (or was lost), or a job ended: look again
  }
}

Status RunService(const Config& config, const std::atomic<bool>& stop) {
  try {
    Service service(config, stop);
    return service.Run();
  } catch (const std::exception& e) {  // outside any job: the spool or the system failed
    return Status(StatusCode::kInternal, std::string("the service failed: ") + e.what());
  }
}

}  // namespace framemill
