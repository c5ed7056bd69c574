#include "supervisor/workers/worker_memory.h"

#include <cstring>

#include "common/clock.h"
#include "common/log.h"

namespace framemill {

Result<WorkerMemory> WorkerMemory::Create(int k, int supervisor) {
  WorkerMemory m;
  Result<SharedMemoryScope> scope = SharedMemoryScope::Create();
  if (!scope.ok()) return scope.status();
  m.scope_ = std::move(*scope);
  Result<SharedMemory> shm = CreateControlBlock(static_cast<uint32_t>(k), supervisor, &m.scope_);
  if (!shm.ok()) return shm.status();
  m.control_ = std::move(*shm);
  m.channel_ = &static_cast<ControlHeader*>(m.control_.data())->channel;
  m.requests_ = CheckedProducer<ChunkRequest, kRingCapacity>(&m.channel_->requests);
  m.results_ = CheckedConsumer<ChunkResult, kRingCapacity>(&m.channel_->results);
  return m;
}

void WorkerMemory::SetChannel(int k) {
  static_cast<ControlHeader*>(control_.data())->channel_index = static_cast<uint32_t>(k);
}

std::string WorkerMemory::Sandbox() const {
  // Worker-written: bounded, and printable ASCII only.
  const char* text = channel_->sandbox;
  std::string s(text, strnlen(text, sizeof(channel_->sandbox)));
  for (char& c : s) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return s;
}

std::string WorkerMemory::ArenaView(const std::string& source, int pid) {
  if (source.empty() || source == arena_source_) return arena_view_;
  Result<std::string> view = scope_.Link(source);
  if (!view.ok()) {
    spdlog::error("worker pid {}: {}", pid, view.status().message());
    return scope_.path() + "/unlinked-arena";
  }
  if (!arena_view_.empty() && arena_view_ != *view) scope_.Unlink(arena_view_);
  arena_source_ = source;
  arena_view_ = *view;
  return *view;
}

PushResult WorkerMemory::Send(const ChunkRequest& request, int pid) {
  ChunkRequest rq = request;
  if (rq.kind != ChunkRequest::kStop && rq.arena_name[0] != '\0') {
    // The job's arena as this worker can reach it: through its own scope alone.
    char source[kNameBytes];
    std::memcpy(source, rq.arena_name, sizeof(source));
    source[kNameBytes - 1] = '\0';
    CopyString(rq.arena_name, ArenaView(source, pid));
  }
  return requests_.TryPush(rq);
}

Result<WorkerState> WorkerMemory::State() const {
  return ValidateWorkerState(channel_->state.load(std::memory_order_acquire));
}

Result<ProbeReport> WorkerMemory::Probe(uint32_t probe_w, uint32_t probe_h) const {
  // Copied out first: the worker may change it while we look.
  char device[kDeviceBytes];
  std::memcpy(device, channel_->device, sizeof(device));
  return ValidateProbe(channel_->probe_out_width.load(std::memory_order_acquire),
                       channel_->probe_out_height.load(std::memory_order_acquire), device,
                       sizeof(device), probe_w, probe_h);
}

Result<TelemetrySnapshot> WorkerMemory::ReadTelemetry() {
  const uint64_t now = MonotonicMs();
  TelemetrySnapshot t = framemill::ReadTelemetry(channel_->telemetry);
  Status s = ValidateTelemetry(t, telemetry_, now);
  if (!s.ok()) return s;
  telemetry_ = t;
  return t;
}

WorkerState WorkerMemory::LastState() const {
  // The dead worker's last words, checked like everything else it wrote.
  Result<WorkerState> state = State();
  return state.ok() ? *state : WorkerState::kEmpty;
}

std::string WorkerMemory::LastError() const {
  return PrintableText(channel_->error, sizeof(channel_->error));
}

}  // namespace framemill
