#include "supervisor/workers/worker_roster.h"

#include <csignal>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

namespace framemill {
namespace {

constexpr int kStopGraceMs = 5000;

}  // namespace

WorkerRoster::WorkerRoster(const JobSettings& settings, std::unique_ptr<WorkerPool> pool,
                           Timeline* timeline, DispatchStats* stats)
    : settings_(settings),
      pool_(std::move(pool)),
      channels_(static_cast<size_t>(pool_->channel_count())),
      timeline_(timeline),
      stats_(stats),
      rng_(std::random_device{}()) {}

WorkerFigures WorkerRoster::Figures(int k) const {
  const TelemetrySnapshot t = pool_->LastTelemetry(k);  // checked when it was read
  WorkerFigures f;
  f.rss_bytes = t.rss_bytes;
  f.gpu_reserved_bytes = t.gpu_reserved_bytes;
  f.chunks_done = t.chunks_done;
  f.heartbeat_ms = t.heartbeat_ms;
  f.busy = !channels_[k].inflight.empty();
  return f;
}

void WorkerRoster::Record(int k, TimelineEventKind event, const std::string& reason, int pid) {
  const int p = pid > 0 ? pid : pool_->Pid(k);
  const TimelineEvent e =
      WorkerTimelineEvent(k, channels_[k].generation, p, event, pool_->LastTelemetry(k), reason);
  if (timeline_ != nullptr) timeline_->Record(e, MonotonicMs());
  stats_->RaisePeak(channels_[k].peak_index,
                    {k, e.generation, e.pid, e.frames, e.rss_bytes, e.gpu_reserved_bytes, ""});
}

Status WorkerRoster::Spawn(int k, int replaces, bool may_adopt) {
  // A standby takes over its worker's GPU; a new worker goes where workers are fewest.
  const int gpu = GpuFor(replaces, settings_.gpus, channels_);
  const bool adopted = may_adopt && spares_.TakeInto(pool_.get(), k, gpu);
  if (!adopted) FM_RETURN_IF_ERROR(pool_->Spawn(k, gpu));
  OpenChannel(k, WorkerRole::kLoading);
  DispatchChannel& ch = channels_[k];
  ch.from_spare = adopted;
  ch.gpu = gpu;
  ch.replaces = replaces;
  ++stats_->workers_started;
  std::string reason = replaces >= 0 ? "standby for worker " + std::to_string(replaces)
                       : adopted     ? "a spare, started before the job"
                                     : "";
  if (gpu >= 0) reason += (reason.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(gpu);
  Record(k, TimelineEventKind::kStart, reason);
  return Status::Ok();
}

void WorkerRoster::OpenChannel(int k, WorkerRole role) {
  DispatchChannel& ch = channels_[k];
  ch = DispatchChannel{};
  ch.role = role;
  ch.generation = pool_->Generation(k);
  ch.model = pool_->ModelOf(k);
  ch.spawn_ms = MonotonicMs();
  if (role == WorkerRole::kActive) ch.ready_ms = ch.spawn_ms;
  ch.limits = JitteredLimits(settings_.recycle, rng_);
  ch.peak_index = stats_->peaks.size();
  stats_->peaks.push_back({k, ch.generation, pool_->Pid(k), 0, 0, 0, ""});
}

int WorkerRoster::FreeChannel() const {
  return framemill::FreeChannel(channels_, [this](int c) { return pool_->Alive(c); });
}

bool WorkerRoster::CheckWorker(int k, WorkerState* state) {
  if (channels_[k].violated) return false;
  Result<TelemetrySnapshot> t = pool_->ReadTelemetry(k);
  if (!t.ok()) {
    Violation(k, t.status().message());
    return false;
  }
  Result<WorkerState> s = pool_->State(k);
  if (!s.ok()) {
    Violation(k, s.status().message());
    return false;
  }
  *state = *s;
  return true;
}

void WorkerRoster::Violation(int k, const std::string& what) {
  DispatchChannel& ch = channels_[k];
  if (ch.violated) return;
  ch.violated = true;
  ch.kill_reason = "protocol violation: " + what;
  stats_->Count({RecycleAction::kKill, RecycleLimit::kProtocol, 0, 0, ch.kill_reason});
  ch.kill_deadline_ms = UINT64_MAX;  // signalled for good; wait for the exit
  spdlog::error("worker {} (gen {}, pid {}): {}; killing it and sending its chunks elsewhere", k,
                ch.generation, pool_->Pid(k), ch.kill_reason);
  Record(k, TimelineEventKind::kKill, ch.kill_reason);
  pool_->Signal(k, SIGKILL);
  Promote(&channels_, k);  // its standby, if any, takes over now
}

void WorkerRoster::Retire(int k) {
  channels_[k].role = WorkerRole::kRetiring;
  spdlog::info("worker {} (gen {}) retiring: {}", k, channels_[k].generation,
               channels_[k].retire_reason);
  Promote(&channels_, k);
}

void WorkerRoster::AwaitExits(const std::function<bool(const DispatchChannel&)>& leaving) {
  for (uint64_t until = MonotonicMs() + kStopGraceMs; MonotonicMs() < until; ::usleep(10 * 1000)) {
    for (const WorkerExit& e : pool_->ReapExited()) {
      if (const DispatchChannel& ch = channels_[e.channel]; LeavingOnItsOwn(ch)) {
        const bool clean = !e.signaled && e.exit_code == 0;
        Record(e.channel, clean ? TimelineEventKind::kStop : TimelineEventKind::kCrash,
               clean ? ch.retire_reason : e.Describe(), e.pid);
      }
      channels_[e.channel] = DispatchChannel{};
    }
    bool pending = false;
    for (int k = 0; k < size(); ++k)
      pending = pending || (pool_->Alive(k) && leaving(channels_[k]));
    if (!pending) return;
  }
}

std::vector<WorkerSnapshot> WorkerRoster::LiveWorkers(
    const std::function<std::string(int gpu)>& device) const {
  std::vector<WorkerSnapshot> live;
  for (int k = 0; k < size(); ++k) {
    if (!pool_->Alive(k)) continue;
    const TelemetrySnapshot t = pool_->LastTelemetry(k);
    live.push_back({k, channels_[k].generation, pool_->Pid(k), t.frames_done, t.rss_bytes,
                    t.gpu_reserved_bytes, device(channels_[k].gpu)});
  }
  return live;
}

void WorkerRoster::Shutdown() {
  AwaitExits(LeavingOnItsOwn);
  pool_->StopAll(kStopGraceMs);
}

std::unique_ptr<WorkerPool> WorkerRoster::Release() {
  AwaitExits(LeavingOnItsOwn);
  for (int k = 0; k < size(); ++k) {
    if (pool_->Alive(k) && !KeptAtRelease(channels_[k])) pool_->Signal(k, SIGKILL);
  }
  AwaitExits([](const DispatchChannel& ch) { return !KeptAtRelease(ch); });
  return std::move(pool_);
}

}  // namespace framemill
