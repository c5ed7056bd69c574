#include "supervisor/workers/dispatcher.h"

#include <cstdint>
#include <algorithm>
#include <csignal>

#include "common/log.h"
#include "common/shm_protocol.h"
#include "common/shm_validate.h"

namespace framemill {
namespace {

constexpr int kWakeIntervalMs = 50;  // longest the loop sleeps without a wake-up

}  // namespace

Dispatcher::Dispatcher(const JobPlan& plan, const JobSettings& settings,
                       std::unique_ptr<WorkerPool> pool, Timeline* timeline,
                       uint64_t start_timeout_ms)
    : plan_(plan),
      settings_(settings),
      roster_(settings, std::move(pool), timeline, &stats_),
      start_timeout_ms_(start_timeout_ms),
      chunks_(plan, settings) {}

Dispatcher::~Dispatcher() = default;

// A ready worker's report, checked, into `*first`; false (and the worker killed) when invalid.
bool Dispatcher::TakeProbe(int k, FirstWorker* first) {
  Result<ProbeReport> probe = roster_.pool().Probe(k);
  if (!probe.ok()) {
    roster_.Violation(k, probe.status().message());
    return false;
  }
  const auto [in_w, in_h] = roster_.pool().ProbeInput(k);
  probe_.Take(*probe, in_w, in_h, settings_.device);
  first->probe_w = probe->width;
  first->probe_h = probe->height;
  first->device = probe->device;
  first->sandbox = roster_.pool().Sandbox(k);
  return true;
}

int Dispatcher::AdoptLeftWorkers(int wanted, bool* killed, FirstWorker* first) {
  int adopted = 0;
  std::vector<int> loading;  // left still loading its model
  for (int k = 0; k < roster_.size(); ++k) {
    WorkerState state = WorkerState::kEmpty;
    if (!roster_.pool().Alive(k)) continue;
    if (!roster_.CheckWorker(k, &state)) {
      *killed = true;  // reaped by the caller
      continue;
    }
    if (state == WorkerState::kStarting) loading.push_back(k);
    if (state != WorkerState::kReady) continue;
    if (adopted == wanted) {  // more than this job wants
      roster_.pool().Signal(k, SIGKILL);
      continue;
    }
    roster_.OpenChannel(k, WorkerRole::kActive);
    if (!TakeProbe(k, first)) {  // killed for it; reaped by the caller
      roster_[k].role = WorkerRole::kNone;
      *killed = true;
      continue;
    }
    roster_.Record(k, TimelineEventKind::kReady, "kept loaded from the previous job");
    ++adopted;
  }
  // Workers the previous job left still loading: with a ready worker to lead this job they are
  // adopted as loading (Run() makes them active once ready); without one, or beyond what this
  // job wants, they are stopped, and the start begins afresh.
  for (int k : loading) {
    if (adopted > 0 && adopted < wanted) {
      roster_.OpenChannel(k, WorkerRole::kLoading);
      roster_.Record(k, TimelineEventKind::kStart, "still loading, kept from the previous job");
      ++adopted;
    } else {
      roster_.pool().Signal(k, SIGKILL);
      *killed = true;
    }
  }
  return adopted;
}

// A worker that exited while the first ones loaded: started again, or the job's end when it
// says why it failed or too many died.
Status Dispatcher::LoadFailed(const WorkerExit& e) {
  std::string why = e.Describe();
  if (!e.stderr_tail.empty() && e.error.empty()) why += "; stderr: " + e.StderrLine();
  // A worker that says why it failed (model not loadable, no such device) speaks for all of
  // them. One that died without a word (a signal, a crash in a library) gets a few tries.
  // (The last words of a worker killed for a protocol violation are not believed.)
  const bool says_failed = e.last_state == WorkerState::kFailed && !roster_[e.channel].violated;
  if (says_failed || ++load_failures_ >= settings_.max_attempts) {
    return Status(StatusCode::kModelInvalid,
                  "worker " + std::to_string(e.channel) + " could not start: " + why);
  }
  spdlog::warn("worker {} died while loading the model ({}); starting it again", e.channel, why);
  roster_.Record(e.channel, TimelineEventKind::kCrash, why, e.pid);
  stats_.CountCrash(e.signaled);
  roster_[e.channel] = DispatchChannel{};
  return roster_.Spawn(e.channel, -1);
}

Result<FirstWorker> Dispatcher::Start(const std::atomic<bool>& stop,
                                      const std::function<void()>& beat) {
  FirstWorker first;
  const int wanted = std::min<int>(settings_.workers, static_cast<int>(plan_.chunks.size()));
  // Workers left loaded by the previous job (see Release) are taken over as they are.
  bool killed = false;  // a worker left by the previous job broke the protocol
  if (AdoptLeftWorkers(wanted, &killed, &first) > 0) {
    for (const WorkerExit& e : roster_.pool().ReapExited()) roster_[e.channel] = DispatchChannel{};
    first.warm = true;  // a ready worker kept from the previous job leads
    return first;       // Run() starts any missing workers
  }
  // Channels of killed workers are reused: their exits are waited for (a little); a killed
  // worker's channel has no role until it is reaped.
  if (killed) {
    roster_.AwaitExits(
        [](const DispatchChannel& ch) { return ch.violated || ch.role == WorkerRole::kNone; });
  }
  for (int k = 0; k < wanted; ++k) FM_RETURN_IF_ERROR(roster_.Spawn(k, -1, /*may_adopt=*/true));
  const uint64_t deadline = MonotonicMs() + start_timeout_ms_;
  while (true) {
    if (beat) beat();
    if (stop.load()) return Status(StatusCode::kCancelled, "stopped while workers were starting");
    for (const WorkerExit& e : roster_.pool().ReapExited()) FM_RETURN_IF_ERROR(LoadFailed(e));
    for (int k = 0; k < wanted; ++k) {
      WorkerState state = WorkerState::kEmpty;
      if (!roster_.pool().Alive(k) || roster_[k].violated || !roster_.CheckWorker(k, &state))
        continue;
      if (state == WorkerState::kReady && TakeProbe(k, &first)) {
        first.spare = roster_[k].from_spare;
        NoteReady(k);
        return first;
      }
    }
    if (MonotonicMs() > deadline) {
      return Status(StatusCode::kWorkerFailed,
                    "no worker loaded the model within worker_start_timeout_s=" +
                        std::to_string(start_timeout_ms_ / 1000));
    }
    roster_.pool().WaitForWake(kWakeIntervalMs);
  }
}

void Dispatcher::NoteReady(int k) {
  DispatchChannel& ch = roster_[k];
  Result<ProbeReport> probe = roster_.pool().Probe(k);
  if (!probe.ok()) return roster_.Violation(k, probe.status().message());
  const auto [in_w, in_h] = roster_.pool().ProbeInput(k);
  if (!probe_.Agrees(*probe, in_w, in_h)) {
    if (ch.model != 0) return DropModel(k, *probe);  // an offered model, not the job's
    if (board_ != nullptr) {
      board_->Fail(
          Status(StatusCode::kModelInvalid, "workers disagree on the model's output size"));
    }
    return;
  }
  spdlog::info("worker {} (gen {}, pid {}) ready on {} after {} ms{}", k, ch.generation,
               roster_.pool().Pid(k), probe->device, MonotonicMs() - ch.spawn_ms,
               ch.replaces >= 0 ? " (standby)" : "");
  roster_.Record(k, TimelineEventKind::kReady);
  ch.ready_ms = MonotonicMs();
  stats_.ready_s.push_back(static_cast<double>(ch.ready_ms - ch.spawn_ms) / 1000.0);
  load_ms_ = ch.ready_ms - ch.spawn_ms;
  ch.role = RoleWhenReady(ch);
  if (MovesOver(roster_.channels(), k, roster_.pool().CurrentModel())) {
    // A move to an offered model: the worker it replaces retires now, at its chunk boundary.
    const int old = ch.replaces;
    roster_[old].retire_reason = ch.model != 0 ? "moved to " + switch_.label()
                                               : "moved back, " + switch_.label() + " dropped";
    roster_.Record(old, TimelineEventKind::kRecycle, roster_[old].retire_reason);
    return roster_.Retire(old);
  }
  // Idle until its turn: a standby spends the wait on a warm-up batch at the job's frame size.
  if (ch.role == WorkerRole::kStandby && chunks_.begun()) roster_.pool().Send(k, chunks_.Warmup());
}

void Dispatcher::MoveWorkers() {
  while (chunks_.processed() < chunks_.total()) {  // nothing left to move for: no move
    const int k = NextToMove(roster_.channels(), roster_.pool().CurrentModel());
    const int spare = k < 0 ? -1 : roster_.FreeChannel();
    if (spare < 0) return;
    Status s = roster_.Spawn(spare, k);
    if (!s.ok()) return switch_.Drop(&roster_.pool(), s.message());  // the job goes on as it was
    roster_[k].standby = spare;
  }
}

void Dispatcher::DropModel(int k, const ProbeReport& said) {
  const auto [in_w, in_h] = roster_.pool().ProbeInput(k);
  if (switch_.moving()) {
    switch_.Drop(&roster_.pool(),
                 fmt::format("it gives {}x{} for a {}x{} frame, not the model's scale", said.width,
                             said.height, in_w, in_h));
  }
  DispatchChannel& ch = roster_[k];
  if (ch.replaces >= 0) roster_[ch.replaces].standby = -1;
  ch.replaces = -1;
  ch.retire_reason = "its model was dropped";
  roster_.Retire(k);  // it holds no chunk: stopped at the loop's next look
}

void Dispatcher::HandleExit(const WorkerExit& e) {
  int k = e.channel;
  DispatchChannel& ch = roster_[k];
  std::string what = e.Describe();
  if (!e.stderr_tail.empty()) what += "; stderr: " + e.StderrLine();
  bool clean = ch.stop_sent && !e.signaled && e.exit_code == 0;
  if (clean) {
    roster_.Record(k, TimelineEventKind::kStop, ch.retire_reason, e.pid);
    spdlog::info("worker {} (gen {}) recycled and exited cleanly", k, ch.generation);
  } else if (ch.kill_deadline_ms != 0) {
    roster_.Record(k, TimelineEventKind::kExit, "killed: " + ch.kill_reason, e.pid);
  } else {
    stats_.CountCrash(e.signaled);
    roster_.Record(k, TimelineEventKind::kCrash, what, e.pid);
    spdlog::warn("worker {} (gen {}, pid {}) died: {}", k, ch.generation, e.pid, what);
  }
  std::deque<int64_t> lost;
  lost.swap(ch.inflight);
  const std::string why = ch.kill_deadline_ms != 0
                              ? "worker killed (" + ch.kill_reason + "; " + what + ")"
                              : "worker died (" + what + ")";
  stats_.chunk_retries += chunks_.Lost(lost, why);
  Promote(&roster_.channels(), k);                          // its standby takes over
  if (ch.replaces >= 0) roster_[ch.replaces].standby = -1;  // a standby died: start another
  if (!clean && ch.kill_deadline_ms == 0 && ch.model != 0) {
    // An offered model that does not load, or crashes: the job goes on with its own.
    switch_.Drop(&roster_.pool(), "worker " + std::to_string(k) + " on it died (" + what + ")");
  } else if (ch.role == WorkerRole::kLoading && !clean) {
    // Workers that keep dying while loading would be restarted forever.
    if (++load_failures_ >= settings_.max_attempts) {
      board_->Fail(Status(StatusCode::kWorkerFailed, "workers failed to start " +
                                                         std::to_string(load_failures_) +
                                                         " times in a row; last: " + what));
    }
  }
  ch = DispatchChannel{};
}

void Dispatcher::CollectResults(int k) {
  DispatchChannel& ch = roster_[k];
  ChunkResult r{};
  while (!ch.violated) {
    PopResult p = roster_.pool().Receive(k, &r);
    if (p == PopResult::kEmpty) return;
    if (p == PopResult::kCorrupt)
      return roster_.Violation(k, "impossible tail index in the result ring");
    Result<size_t> index = chunks_.Match(r, ch.inflight);
    if (!index.ok()) return roster_.Violation(k, index.status().message());
    const int64_t chunk = ch.inflight[*index];
    ch.inflight.erase(ch.inflight.begin() + static_cast<std::ptrdiff_t>(*index));
    stats_.CountFallbacks(r.fallback_events, r.fallback_per_call, r.fallback_tile);
    if (r.error != 0) {
      const std::string why = "model failed: " + PrintableText(r.message, sizeof(r.message));
      if (chunks_.Failed(chunk, why, StatusCode::kModelInvalid)) ++stats_.chunk_retries;
    } else {
      load_failures_ = 0;
      stats_.CountChunk(static_cast<double>(r.busy_us) / 1e6, !ch.first_chunk_done);
      ch.first_chunk_done = true;
      chunks_.Processed(chunk);
      roster_.Record(k, TimelineEventKind::kChunk);
    }
  }
}

void Dispatcher::CheckLimits(int k, uint64_t now) {
  DispatchChannel& ch = roster_[k];
  if (ch.kill_deadline_ms != 0) {
    if (now >= ch.kill_deadline_ms) {
      spdlog::warn("worker {} (gen {}) still alive {} s after SIGTERM; SIGKILL", k, ch.generation,
                   settings_.kill.grace_s);
      roster_.pool().Signal(k, SIGKILL);
      ch.kill_deadline_ms = UINT64_MAX;  // signalled for good; wait for the exit
    }
    return;
  }
  WorkerStanding standing;
  standing.phase = PhaseOf(ch.role);
  standing.spawn_ms = ch.spawn_ms;
  standing.ready_ms = ch.ready_ms;
  standing.start_timeout_ms = start_timeout_ms_;
  standing.load_ms = load_ms_;
  standing.has_standby = ch.standby >= 0;
  if (chunks_.begun()) {
    standing.run_chunks_left = static_cast<uint64_t>(chunks_.total() - chunks_.processed());
  }
  const RecycleVerdict v = Judge(ch.limits, settings_, roster_.Figures(k), standing, now);
  switch (v.action) {
    case RecycleAction::kKeep:
      return;
    case RecycleAction::kKill:
      stats_.Count(v);
      ch.kill_reason = v.reason;
      roster_.Record(k, TimelineEventKind::kKill, v.reason);
      spdlog::warn("worker {} (gen {}, pid {}): {}; SIGTERM, SIGKILL in {} s", k, ch.generation,
                   roster_.pool().Pid(k), v.reason, settings_.kill.grace_s);
      roster_.pool().Signal(k, SIGTERM);
      ch.kill_deadline_ms = now + static_cast<uint64_t>(settings_.kill.grace_s * 1000);
      if (ch.kill_deadline_ms == now) ch.kill_deadline_ms = now + 1;
      return;
    case RecycleAction::kRecycle:
      ch.retire_reason = v.reason;
      stats_.Count(v);
      roster_.Record(k, TimelineEventKind::kRecycle, v.reason);
      roster_.Retire(k);
      return;
    case RecycleAction::kStartStandby: {
      const int spare = roster_.FreeChannel();
      if (spare < 0) return;  // no spare channel: the replacement starts cold at retirement
      spdlog::info("worker {} (gen {}) nears its limit ({}); standby starts on channel {}", k,
                   ch.generation, v.reason, spare);
      Status s = roster_.Spawn(spare, k);
      if (s.ok()) {
        ch.standby = spare;
      } else {
        // No standby: the replacement starts cold when this worker retires.
        spdlog::warn("cannot start a standby for worker {}: {}", k, s.message());
      }
      return;
    }
  }
}

void Dispatcher::Assign(int k) {
  DispatchChannel& ch = roster_[k];
  for (int wanted = ChunksWanted(ch); wanted > 0; --wanted) {
    std::optional<ChunkRequest> rq = chunks_.Next();
    if (!rq) return;
    PushResult sent = roster_.pool().Send(k, *rq);
    if (sent != PushResult::kPushed) {
      chunks_.Unsent(*rq);
      if (sent == PushResult::kCorrupt)
        roster_.Violation(k, "impossible head index in the request ring");
      return;
    }
    ch.inflight.push_back(static_cast<int64_t>(rq->chunk_id));
  }
}

// The one place that waits (poll on the workers' sockets and the pool's eventfd, written by the
// decoder and encoder threads) and then looks at everything.
void Dispatcher::Run(ChunkBoard* board, const std::string& arena_name, const ArenaGeometry& arena,
                     int64_t first_chunk, const std::atomic<bool>& stop,
                     const std::function<void(int64_t)>& tick) {
  board_ = board;
  chunks_.Begin(board, arena_name, arena, first_chunk);
  const int wanted = std::min<int>(settings_.workers, static_cast<int>(plan_.chunks.size()));
  while (!board_->AllEncoded() && !board_->failed()) {
    if (stop.load()) {
      board_->Fail(Status(StatusCode::kCancelled, "stopped by signal"));
      break;
    }
    for (const WorkerExit& e : roster_.pool().ReapExited()) HandleExit(e);
    uint64_t now = MonotonicMs();
    for (int k = 0; k < roster_.size() && !board_->failed(); ++k) {
      if (!roster_.pool().Alive(k)) continue;
      DispatchChannel& ch = roster_[k];
      WorkerState state = WorkerState::kEmpty;
      if (!roster_.CheckWorker(k, &state)) continue;  // killed now or before: wait for its exit
      if (ch.role == WorkerRole::kLoading && state == WorkerState::kReady) NoteReady(k);
      if (ch.violated) continue;
      CollectResults(k);
      if (ch.violated) continue;
      if (!roster_.pool().RequestsIntact(k)) {
        roster_.Violation(k, "impossible head index in the request ring");
        continue;
      }
      CheckLimits(k, now);
      Assign(k);
      if (WantsStop(ch)) {
        ChunkRequest stop_rq{};
        stop_rq.kind = ChunkRequest::kStop;
        PushResult sent = roster_.pool().Send(k, stop_rq);
        ch.stop_sent = sent == PushResult::kPushed;
        if (sent == PushResult::kCorrupt)
          roster_.Violation(k, "impossible head index in the request ring");
      }
    }
    // Workers on another model than the pool's move to it: an offer's, or the job's again.
    if (switch_.TakeInto(&roster_.pool()) || switch_.moving() || switch_.dropped()) MoveWorkers();
    // Keep `wanted` workers serving while chunks remain: replaces crashed, killed and
    // (without warm standby) recycled workers.
    while (!board_->failed() && chunks_.processed() < chunks_.total() &&
           Serving(roster_.channels()) < wanted && spawn_backoff_.Due(MonotonicMs())) {
      int k = roster_.FreeChannel();
      if (k < 0) break;
      Status s = roster_.Spawn(k, -1);
      if (!s.ok()) {
        if (std::optional<uint64_t> wait_ms = spawn_backoff_.Failed(MonotonicMs())) {
          spdlog::warn("{}; trying again in {} s", s.message(), *wait_ms / 1000);
        } else {
          board_->Fail(s.WithContext(std::to_string(spawn_backoff_.failures()) + " tries"));
        }
        break;
      }
      spawn_backoff_.Started();
    }
    if (tick) tick(chunks_.processed());
    roster_.pool().WaitForWake(kWakeIntervalMs);
  }
}

std::vector<WorkerSnapshot> Dispatcher::LiveWorkers() const {
  return roster_.LiveWorkers([this](int gpu) { return probe_.Device(gpu, settings_.device); });
}

}  // namespace framemill
