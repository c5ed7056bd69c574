#include "supervisor/workers/dispatch_channel.h"

namespace framemill {

const char* Name(WorkerRole role) {
  switch (role) {
    case WorkerRole::kNone:
      return "none";
    case WorkerRole::kLoading:
      return "loading";
    case WorkerRole::kStandby:
      return "standby";
    case WorkerRole::kActive:
      return "active";
    case WorkerRole::kRetiring:
      return "retiring";
  }
  return "unknown";
}

WorkerPhase PhaseOf(WorkerRole role) {
  switch (role) {
    case WorkerRole::kLoading:
      return WorkerPhase::kLoading;
    case WorkerRole::kActive:
      return WorkerPhase::kActive;
    case WorkerRole::kNone:
    case WorkerRole::kStandby:
    case WorkerRole::kRetiring:
      return WorkerPhase::kOther;
  }
  return WorkerPhase::kOther;
}

int LeastLoadedGpu(const std::vector<int>& gpus, const std::vector<DispatchChannel>& channels) {
  int best = -1, best_count = 0;
  for (int gpu : gpus) {
    int count = 0;
    for (const DispatchChannel& ch : channels) {
      if (ch.gpu == gpu && ch.role != WorkerRole::kNone && ch.role != WorkerRole::kRetiring) {
        ++count;
      }
    }
    if (best < 0 || count < best_count) {
      best = gpu;
      best_count = count;
    }
  }
  return best;
}

int GpuFor(int replaces, const std::vector<int>& gpus,
           const std::vector<DispatchChannel>& channels) {
  return replaces >= 0 ? channels[static_cast<size_t>(replaces)].gpu
                       : LeastLoadedGpu(gpus, channels);
}

int FreeChannel(const std::vector<DispatchChannel>& channels,
                const std::function<bool(int)>& alive) {
  for (int k = 0; k < static_cast<int>(channels.size()); ++k) {
    if (channels[static_cast<size_t>(k)].role == WorkerRole::kNone && !alive(k)) return k;
  }
  return -1;
}

int Serving(const std::vector<DispatchChannel>& channels) {
  int n = 0;
  for (const DispatchChannel& ch : channels) {
    if (ch.role == WorkerRole::kActive || (ch.role == WorkerRole::kLoading && ch.replaces < 0)) {
      ++n;
    }
  }
  return n;
}

int ChunksWanted(const DispatchChannel& ch) {
  if (ch.role != WorkerRole::kActive || ch.kill_deadline_ms != 0) return 0;
  const int inflight = static_cast<int>(ch.inflight.size());
  return inflight < kInflightPerWorker ? kInflightPerWorker - inflight : 0;
}

bool WantsStop(const DispatchChannel& ch) {
  return ch.role == WorkerRole::kRetiring && ch.inflight.empty() && !ch.stop_sent;
}

WorkerRole RoleWhenReady(const DispatchChannel& ch) {
  return ch.replaces >= 0 ? WorkerRole::kStandby : WorkerRole::kActive;
}

void Promote(std::vector<DispatchChannel>* channels, int k) {
  DispatchChannel& ch = (*channels)[static_cast<size_t>(k)];
  const int s = ch.standby;
  ch.standby = -1;
  if (s < 0) return;
  DispatchChannel& standby = (*channels)[static_cast<size_t>(s)];
  standby.replaces = -1;
  if (standby.role == WorkerRole::kStandby) standby.role = WorkerRole::kActive;
}

int NextToMove(const std::vector<DispatchChannel>& channels, uint64_t current) {
  for (int k = 0; k < static_cast<int>(channels.size()); ++k) {
    const DispatchChannel& ch = channels[static_cast<size_t>(k)];
    if (ch.role == WorkerRole::kActive && ch.standby < 0 && ch.kill_deadline_ms == 0 &&
        ch.model != current) {
      return k;
    }
  }
  return -1;
}

bool MovesOver(const std::vector<DispatchChannel>& channels, int k, uint64_t current) {
  const DispatchChannel& ch = channels[static_cast<size_t>(k)];
  if (ch.role != WorkerRole::kStandby || ch.replaces < 0 || ch.model != current) return false;
  const DispatchChannel& old = channels[static_cast<size_t>(ch.replaces)];
  return old.role == WorkerRole::kActive && old.model != current;
}

bool LeavingOnItsOwn(const DispatchChannel& ch) {
  return ch.role == WorkerRole::kRetiring && ch.stop_sent;
}

bool KeptAtRelease(const DispatchChannel& ch) {
  return (ch.role == WorkerRole::kActive && ch.inflight.empty()) || ch.role == WorkerRole::kLoading;
}

}  // namespace framemill
