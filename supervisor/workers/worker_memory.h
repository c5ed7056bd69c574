// What one worker process shares with the supervisor, as the supervisor holds it: the worker's own
// scope of shared memory (common/shared_memory.h: the one directory its sandbox binds), its control
// block there (a fresh object per spawn, which no other worker maps), the rings in it driven with
// the supervisor's own indices (CheckedProducer/CheckedConsumer), the name of the job's arena in
// its scope, and the last valid telemetry it wrote. The WorkerPool has one per live worker, beside
// the process itself.
//
// Everything read back from the control block goes through shm_validate.h: State, Probe,
// Telemetry and LastWords return a checked copy or a kWorkerFailed "what was wrong".
//
// Thread safety: the supervisor's dispatch thread only. Not copyable; movable.
#pragma once

#include <cstdint>
#include <string>

#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/shm_validate.h"
#include "common/status.h"

namespace framemill {

class WorkerMemory {
 public:
  // A new scope and, in it, channel k's control block, owned by the process `supervisor`.
  static Result<WorkerMemory> Create(int k, int supervisor);

  WorkerMemory() = default;
  WorkerMemory(WorkerMemory&&) = default;
  WorkerMemory& operator=(WorkerMemory&&) = default;

  // Full path of the control block (the worker's --control).
  const std::string& ControlPath() const { return control_.name(); }
  // Tells the worker its channel (a spare taken onto another one: WorkerPool::Adopt).
  void SetChannel(int k);

  // What sandbox the worker reported, printable ASCII; "" before it has said.
  std::string Sandbox() const;

  // Queues `request`, naming the job's arena by its name in this worker's scope: linked there the
  // first time it is sent, and the arena it was sent before unlinked (the worker maps one job's
  // arena at a time). On a failed link the worker is sent a name it cannot open, and fails the
  // chunk saying so (logged with `pid`). kFull / kCorrupt as CheckedProducer's.
  PushResult Send(const ChunkRequest& request, int pid);
  bool RequestsIntact() { return requests_.Verify(); }
  PopResult Receive(ChunkResult* out) { return results_.TryPop(out); }

  Result<WorkerState> State() const;
  // The probe the worker reports, checked against the input it was told (probe_w x probe_h).
  Result<ProbeReport> Probe(uint32_t probe_w, uint32_t probe_h) const;
  // Reads the telemetry and checks it against the last valid reading, which it then becomes.
  Result<TelemetrySnapshot> ReadTelemetry();
  TelemetrySnapshot LastTelemetry() const { return telemetry_; }
  // A worker that has exited: its last state (kEmpty when invalid) and, when it failed, its own
  // account, escaped.
  WorkerState LastState() const;
  std::string LastError() const;

 private:
  // The name of the arena `source` in this scope (see Send).
  std::string ArenaView(const std::string& source, int pid);

  SharedMemoryScope scope_;
  SharedMemory control_;      // in scope_
  std::string arena_source_;  // the arena it was last sent, as the job named it
  std::string arena_view_;    // its name in scope_, as the worker is told it
  WorkerChannel* channel_ = nullptr;
  CheckedProducer<ChunkRequest, kRingCapacity> requests_;
  CheckedConsumer<ChunkResult, kRingCapacity> results_;
  TelemetrySnapshot telemetry_;  // the last valid reading
};

}  // namespace framemill
