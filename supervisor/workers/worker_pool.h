// The worker processes of one supervisor and what each shares with it. This is the one place
// where workers are started, watched for exit, and stopped; what to do about an exit (retry,
// replace, give up) or about a protocol violation is the caller's policy.
//
// Each worker process gets its own scope of shared memory (a private directory that its sandbox
// binds, and no other worker's can reach: common/shared_memory.h), its own control block in it
// (a fresh shared-memory object per spawn, which no other worker maps) and one end of a socket
// pair, inherited at exec (--wake-fd N): the
// worker writes a byte to wake the supervisor, the supervisor writes one to wake the worker. The
// supervisor waits in poll() on its ends plus an eventfd of its own (Wake(), for its decoder and
// encoder threads): no kernel object in shared memory, relative timeouts only, and each end of
// the pair has its own file status flags, so nothing a worker does to its end can make the
// supervisor block.
//
// Everything read back from a worker's control block goes through shm_validate.h (each worker's
// WorkerMemory, worker_memory.h): State, Probe, Telemetry and Receive return a checked copy or a
// kWorkerFailed "what was wrong", and the rings are driven through CheckedProducer/CheckedConsumer
// with the pool's own indices.
//
// Thread safety: every method is called from the supervisor's dispatch thread only, except
// Wake(), which any thread may call.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/shm_validate.h"
#include "common/status.h"
#include "common/worker_launch.h"

namespace framemill {

// The logs of ended workers a pool keeps (WorkerOptions::log_dir).
inline constexpr size_t kKeptWorkerLogs = 16;

struct WorkerOptions {
  std::string worker_binary;  // framemill-worker
  std::string model;          // TorchScript file (for messages when model_fd is set)
  // The settings every worker of the pool is started with (common/worker_launch.h): the device
  // (auto | cpu | cuda | cuda:N), precision, optimization, autotune, tile, the probe's input (a
  // kProbeSize square, face mode's face_size, or a one-shape package's shape:
  // supervisor/job/model_fit.h), log level and sandbox (kRequired: a worker that cannot be
  // sandboxed fails; the first one's error fails the job). The pool fills in each worker's own:
  // its control block, channel, wake-up descriptor, model descriptor and label.
  WorkerLaunch launch;
  // Each worker's stderr goes to log_dir/worker-<k>-<gen>.log, at most kMaxWorkerFileBytes
  // (worker/sandbox/sandbox.h) each. Of the workers that ended while the pool ran (recycled,
  // crashed, killed), the logs of the last kKeptWorkerLogs are kept and older ones removed, so that
  // a storm of recycles or crashes cannot fill the disk; the live workers' logs stay.
  std::string log_dir;
  std::string pytorch_alloc_conf;  // "" = inherit the environment as it is
  int model_fd = -1;  // open read-only descriptor of the checked model file (not owned); the pool
                      // keeps its own dup
};

// True when a worker's sandbox summary (WorkerPool::Sandbox) says a layer is missing ("partial:
// ...") or none is in place ("none ..."), or a worker without Landlock's file rules has no
// private root either; false for a complete sandbox and for "off".
bool WorkerSandboxDegraded(const std::string& summary);

// Where a worker finds its model: the pool's descriptor, duplicated to this number in the child.
inline constexpr int kWorkerModelFd = 3;

// The launch of the worker on channel k (common/worker_launch.h): options.launch, pinned to `gpu`
// when >= 0 (it then sees one GPU and runs on "cuda"), with its control block and its end of the
// wake-up socket. The model is named only as a label: the worker reads it from kWorkerModelFd
// (model_fd is that, or -1 for a spare, whose model comes in its load request).
WorkerLaunch WorkerLaunchFor(const WorkerOptions& options, int k, int gpu,
                             const std::string& control, int wake_fd, bool spare);

// framemill-worker's arguments after the program name: WorkerLaunchFor's, encoded.
std::vector<std::string> WorkerArguments(const WorkerOptions& options, int k, int gpu,
                                         const std::string& control, int wake_fd);

// The arguments fixed when a worker process starts, with "--await-model on" for a spare. The
// rest (the model's) are WorkerModelArguments.
std::vector<std::string> WorkerSpawnArguments(const WorkerOptions& options, int k, int gpu,
                                              const std::string& control, int wake_fd, bool spare);
// The model's arguments, for channel k: on the command line of a worker started for the job, or
// in the load request a spare gets (common/load_request.h).
std::vector<std::string> WorkerModelArguments(const WorkerOptions& options, int k);
// What a spare must have been started with to serve a pool of `options` on `gpu`: the program,
// the GPU it is pinned to, the device it ends up on ("auto" and "cuda" are cuda:0 where the NVIDIA
// driver is, "auto" is "cpu" where it is not: what the spare prepared, and the sandbox it chose,
// depend on that alone), the sandbox mode, the log level and the allocator's environment. Equal
// keys: the spare fits; the load request then tells it the job's own device name.
std::string SpareKey(const WorkerOptions& options, int gpu);

// A worker process that has ended and been reaped.
struct WorkerExit {
  int channel = -1;
  int pid = 0;
  int exit_code = 0;  // valid when !signaled
  int signal = 0;     // valid when signaled
  bool signaled = false;
  uint64_t generation = 0;
  WorkerState last_state = WorkerState::kEmpty;  // kEmpty also when the state was invalid
  std::string error;        // the worker's own account (channel error text, escaped), may be empty
  std::string stderr_tail;  // last lines the worker wrote to stderr

  std::string Describe() const;  // "exit code 3: <error>" / "killed by signal 9 (Killed)"
  std::string StderrLine() const;  // stderr_tail on one line, its lines joined by '|'
};

class WorkerPool {
 public:
  // A pool with room for `channels` workers (at most kMaxWorkerChannels). Takes its own
  // duplicate of options.model_fd (or, when that is -1, opens options.model itself, once): every
  // worker gets that descriptor, never the name.
  static Result<std::unique_ptr<WorkerPool>> Create(const WorkerOptions& options, int channels);
  // A pool of spares: workers started without a model (--await-model on), each waiting with its
  // device ready until a job's pool takes it (Adopt). options.model and model_fd are not used;
  // each spare's output goes to log_dir/spare-<k>-<gen>.log until it is taken. A spare pool sends
  // no requests: StopAll's wake-up is a spare's stop. Generations count on from
  // `generations_before` (a spare pool that follows another into the same log folder).
  static Result<std::unique_ptr<WorkerPool>> CreateSpares(const WorkerOptions& options,
                                                          int channels,
                                                          uint64_t generations_before = 0);

  ~WorkerPool();  // kills and reaps every worker still running; removes their control blocks

  int channel_count() const { return channel_count_; }
  // Full path of the control block of the worker on channel k ("" when none).
  std::string ControlPath(int k) const;

  // What sandbox the worker on channel k reported (worker/sandbox/sandbox.h), as printable text; ""
  // before it has said.
  std::string Sandbox(int k) const;

  // Starts a worker on channel `k`, which must have no live process, with a fresh control block
  // and socket pair. The worker gets the next generation number (1, 2, ...). `gpu` >= 0
  // pins it to that GPU: it sees only that one (CUDA_VISIBLE_DEVICES) and runs on cuda:0.
  Status Spawn(int k, int gpu = -1);
  // Takes a live spare from `spares` (CreateSpares) that fits this pool on `gpu` (SpareKey) onto
  // channel k, which must have no live process, instead of starting a worker: the spare gets a
  // load request with this pool's model, its arguments for channel k, and its log
  // (log_dir/worker-<k>-<gen>.log), and loads as a worker Spawn started would. The next
  // generation number is its own. kWorkerFailed when no spare fits or is alive (spares that
  // exited are reaped and logged); kIo when the request cannot be sent (that spare is killed).
  Status Adopt(int k, int gpu, WorkerPool* spares);
  // Workers started from now on (Spawn) get `model_fd` (duplicated; not owned) instead of the
  // pool's model, named `label`, and probe it at `probe_width` x `probe_height` x `probe_batch`
  // (a compiled engine of the job's shape: supervisor/job/engine_beside.h). Workers running
  // keep theirs; each is checked against the probe it was started with. Not for a spare pool.
  Status SwitchModel(int model_fd, const std::string& label, uint32_t probe_width,
                     uint32_t probe_height, uint32_t probe_batch);
  // Workers started from now on get the pool's first model again, as before any SwitchModel.
  void RevertModel();
  // Which model workers started now get: 0 the pool's first, else the SwitchModel count.
  uint64_t CurrentModel() const { return model_; }
  // Which model the worker on channel k was started with (CurrentModel then).
  uint64_t ModelOf(int k) const;
  // The probe's input the worker on channel k was started with, {0, 0} when none is there.
  std::pair<uint32_t, uint32_t> ProbeInput(int k) const;
  // Whether channel k's worker came from a spare (Adopt).
  bool Adopted(int k) const;
  uint64_t Generation(int k) const;

  // Sends `signal` to the worker on channel k, if any.
  void Signal(int k, int signal);

  // Is a process running (not yet reaped) on channel k?
  bool Alive(int k) const;
  int Pid(int k) const;

  // Reaps every worker that has exited since the last call, without blocking.
  std::vector<WorkerExit> ReapExited();

  // Queues a request for worker k and wakes it. kFull when its ring is full; kCorrupt when the
  // worker wrote an impossible head index (a protocol violation; the ring stays unusable).
  // The request's arena_name is the job's arena as the supervisor made it; the worker is sent
  // the name of that arena in its own scope instead, linked there at the first request that
  // names it (the arena it was sent before is unlinked then). So a worker reaches the arenas it
  // is sent, and no other: not another job's, nor a later job's when it retires beside it.
  PushResult Send(int k, const ChunkRequest& request);

  // false when worker k's request ring holds an impossible head index (a protocol violation),
  // checked without sending: a worker that claims to have read requests it never took would
  // otherwise go unseen while no chunk is left to send it.
  bool RequestsIntact(int k);

  // The next result of worker k, copied out of its ring (its fields not yet checked: see
  // ValidateChunkResult). kCorrupt when the worker wrote an impossible tail index.
  PopResult Receive(int k, ChunkResult* out);

  // The worker's state, checked (an error names the invalid value).
  Result<WorkerState> State(int k);
  // What a ready worker reports about its model, checked.
  Result<ProbeReport> Probe(int k);
  // Reads the worker's telemetry and checks it against the last valid reading; on success that
  // reading becomes LastTelemetry(k).
  Result<TelemetrySnapshot> ReadTelemetry(int k);
  // The last valid reading (zeros before the first); reads no shared memory.
  TelemetrySnapshot LastTelemetry(int k) const;

  // Blocks until a worker or Wake() signals, or `timeout_ms` (relative, monotonic) passes.
  void WaitForWake(int timeout_ms);
  void Wake();

  // Asks every live worker to exit (kStop), waits up to `grace_ms`, then SIGKILLs the rest.
  void StopAll(int grace_ms);
  // Asks every live worker to exit (kStop) and returns at once; StopAll later reaps them.
  void AskAllToStop();

 private:
  WorkerPool(const WorkerOptions& options, int wake_fd, int channels, int model_fd);
  struct Process;
  // The log of a worker that ended, read: kept among the last kKeptWorkerLogs, the oldest of
  // those removed.
  void SettleLog(const std::string& path);
  // Opens a worker's log for writing, as the spawn's redirection does.
  Result<int> OpenLog(const std::string& path) const;

  WorkerOptions options_;
  int wake_fd_;  // eventfd: Wake() from the supervisor's own threads
  int channel_count_;
  std::vector<std::unique_ptr<Process>> processes_;  // by channel; null when none
  uint64_t generations_ = 0;
  std::deque<std::string> kept_logs_;  // of workers that ended, oldest first
  int model_fd_ = -1;  // owned; given to every worker as kWorkerModelFd; -1 in a spare pool
  bool spares_ = false;  // CreateSpares
  // The model workers started now get (CurrentModel), and how many SwitchModel made.
  uint64_t model_ = 0, models_switched_ = 0;
  // The pool's first model, while another replaces it (SwitchModel; RevertModel restores it).
  struct FirstModel {
    int fd;  // owned
    std::string model;
    WorkerLaunch launch;
  };
  std::unique_ptr<FirstModel> first_;
};

}  // namespace framemill
