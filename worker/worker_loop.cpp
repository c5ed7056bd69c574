#include "worker/worker_loop.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <malloc.h>
#include <map>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/date_time/posix_time/posix_time_types.hpp>
#include <torch/torch.h>

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/Context.h>
#include <cuda_runtime_api.h>
#endif

#include "common/clock.h"
#include "common/log_lines.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "worker/batch_runner.h"
#include "worker/fault_injection.h"
#include "worker/frame_convert.h"
#include "worker/frame_model.h"
#include "worker/nvml_memory.h"
#include "worker/telemetry.h"

namespace framemill {
namespace {

constexpr int kIdleWaitMs = 200;  // wake-up period while idle: heartbeat and parent check

// How the arena's input frames lie, for the conversion to the model's input.
InputLayout ArenaLayout(const ArenaHeader& arena) {
  InputLayout layout;
  layout.format = arena.in_format;
  layout.height = arena.in_height;
  layout.width = arena.in_width;
  layout.matrix = arena.in_matrix;
  layout.full_range = arena.in_full_range != 0;
  return layout;
}

class Worker {
 public:
  Worker(ControlHeader* control, int channel)
      : control_(control), ch_(control->channels[channel]), channel_(channel) {}

  int Run(const WorkerArgs& args);

 private:
  int Fail(int exit_code, const std::string& message);
  bool SupervisorAlive() const { return ::getppid() == control_->supervisor_pid; }
  ArenaHeader* Arena(const char* name, std::string* error);
  void RegisterArena(const SharedMemory& shm);
  void UnregisterArena();
  ChunkResult Process(const ChunkRequest& rq);
  void Warmup(const ChunkRequest& rq);
  void Publish(const ChunkResult& result);

  ControlHeader* control_;
  WorkerChannel& ch_;
  int channel_;
  Fault fault_;  // test-only, from the environment
  std::unique_ptr<NvmlMemory> nvml_;
  std::unique_ptr<FrameModel> model_;
  std::unique_ptr<BatchRunner> runner_;
  std::map<std::string, SharedMemory> arenas_;  // mapped by name; a job's arena, kept mapped
  bool arena_registered_ = false;  // the arena is page-locked for the GPU (cudaHostRegister)
  void* registered_ptr_ = nullptr;
};

int Worker::Fail(int exit_code, const std::string& message) {
  LogError("worker " + std::to_string(channel_) + ": " + message);
  CopyString(ch_.error, message);
  ch_.state.store(WorkerState::kFailed, std::memory_order_release);
  control_->wake.post();
  return exit_code;
}

ArenaHeader* Worker::Arena(const char* name, std::string* error) {
  auto it = arenas_.find(name);
  if (it == arenas_.end()) {
    // One job at a time: an arena from an earlier job is no longer needed.
    UnregisterArena();
    arenas_.clear();
    Result<SharedMemory> shm = SharedMemory::Open(name);
    if (!shm.ok()) {
      *error = shm.status().message();
      return nullptr;
    }
    auto* h = static_cast<ArenaHeader*>(shm->data());
    if (shm->size() < sizeof(ArenaHeader) || h->magic != kArenaMagic ||
        h->version != kProtocolVersion || h->header_bytes != sizeof(ArenaHeader)) {
      *error = std::string("arena ") + name + " has another layout version";
      return nullptr;
    }
    it = arenas_.emplace(name, std::move(*shm)).first;
    RegisterArena(it->second);
  }
  return static_cast<ArenaHeader*>(it->second.data());
}

// Page-locks the arena once per job, so that copies to the GPU go straight from shared memory
// (no staging through a pinned bounce buffer) and can run asynchronously.
void Worker::RegisterArena(const SharedMemory& shm) {
#ifdef FRAMEMILL_WITH_CUDA
  if (!model_->device().is_cuda()) return;
  cudaError_t e = cudaHostRegister(shm.data(), shm.size(), cudaHostRegisterDefault);
  if (e == cudaSuccess) {
    arena_registered_ = true;
    registered_ptr_ = shm.data();
  } else {
    (void)cudaGetLastError();  // clear it: the copies still work, through pageable memory
    LogWarn("worker " + std::to_string(channel_) + ": cudaHostRegister of the arena failed (" +
            cudaGetErrorString(e) + "); copying through pageable memory");
  }
#else
  (void)shm;
#endif
}

void Worker::UnregisterArena() {
#ifdef FRAMEMILL_WITH_CUDA
  if (registered_ptr_ != nullptr) cudaHostUnregister(registered_ptr_);
#endif
  registered_ptr_ = nullptr;
  arena_registered_ = false;
}

ChunkResult Worker::Process(const ChunkRequest& rq) {
  const uint64_t t0 = MonotonicUs();
  ChunkResult result{};
  result.chunk_id = rq.chunk_id;
  result.slot = rq.slot;
  auto fail = [&](const std::string& message) {
    result.error = 1;
    CopyString(result.message, message);
    return result;
  };
  std::string error;
  ArenaHeader* arena = Arena(rq.arena_name, &error);
  if (arena == nullptr) return fail(error);
  if (rq.slot >= arena->slot_count || rq.frames > arena->chunk_frames || rq.batch == 0) {
    return fail("request out of the arena's bounds");
  }
  ChunkFrames c;
  c.in = arena->SlotIn(rq.slot);
  c.out = arena->SlotOut(rq.slot);
  c.frames = rq.frames;
  c.batch = rq.batch;
  c.layout = ArenaLayout(*arena);
  c.out_h = arena->out_height;
  c.out_w = arena->out_width;
  c.first_frame = static_cast<int64_t>(rq.first_frame);
  c.pinned = arena_registered_;
  Status escape = TryEscapeFault(fault_, c.first_frame, c.frames);
  if (!escape.ok()) return fail(escape.message());
  Status s = runner_->Run(
      c, [this](int64_t first, int64_t n) { MaybeInjectFault(fault_, first, n); },
      [this](int64_t n) {
        ch_.telemetry.frames_done.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        PublishTelemetry(ch_.telemetry, model_->device(), nvml_.get());
      });
  if (!s.ok()) return fail(s.message());
  result.frames_done = rq.frames;
  result.busy_us = MonotonicUs() - t0;
  ch_.telemetry.chunks_done.fetch_add(1, std::memory_order_relaxed);
  return result;
}

void Worker::Warmup(const ChunkRequest& rq) {
  std::string error;
  ArenaHeader* arena = Arena(rq.arena_name, &error);
  if (arena == nullptr || rq.batch == 0) return;  // the first real chunk will report the problem
  uint64_t t0 = MonotonicMs();
  torch::InferenceMode guard;
  // Random frames in the arena's layout through the same conversion as real ones: the model
  // then sees the dtype, shape and memory format (channels-last) that cuDNN tunes for.
  InputLayout layout = ArenaLayout(*arena);
  try {
    torch::Tensor frames =
        torch::randint(0, 256, {static_cast<int64_t>(rq.batch), layout.FrameBytes()},
                       torch::TensorOptions().device(model_->device()).dtype(torch::kUInt8));
    Result<torch::Tensor> y = model_->Run(ToModelInput(frames, layout, model_->dtype()));
    if (y.ok()) (void)y->sum().item<float>();  // wait for the device to finish
  } catch (const std::exception& e) {
    // Out of memory, say: the first real chunk meets it again and reports it.
    LogWarn("worker " + std::to_string(channel_) + ": warm-up failed: " + FirstLine(e.what()));
  }
  PublishTelemetry(ch_.telemetry, model_->device(), nvml_.get());
  LogDebug("worker " + std::to_string(channel_) + ": warm-up at " +
           std::to_string(arena->in_width) + "x" + std::to_string(arena->in_height) + " took " +
           std::to_string(MonotonicMs() - t0) + " ms");
}

void Worker::Publish(const ChunkResult& result) {
  // The supervisor keeps at most a few requests in flight per worker, fewer than the ring holds,
  // so this loop only spins if the supervisor is stuck; it ends when the supervisor is gone.
  while (!ch_.results.TryPush(result)) {
    if (!SupervisorAlive()) std::_Exit(kWorkerExitOrphaned);
    ::usleep(1000);
  }
  control_->wake.post();
}

int Worker::Run(const WorkerArgs& args) {
  ch_.pid.store(::getpid(), std::memory_order_release);
  CopyString(ch_.sandbox, args.sandbox);
  if (!args.sandbox_error.empty()) return Fail(kWorkerExitSandbox, args.sandbox_error);
  const char* fault_spec = std::getenv(kFaultEnvVar);
  Result<Fault> fault = ParseFault(fault_spec == nullptr ? "" : fault_spec);
  if (!fault.ok()) return Fail(kWorkerExitUsage, fault.status().message());
  fault_ = *fault;
  PublishTelemetry(ch_.telemetry, torch::Device(torch::kCPU));
  Result<torch::Device> device = ResolveDevice(args.device);
  if (!device.ok()) return Fail(kWorkerExitModel, device.status().message());
  uint64_t t0 = MonotonicMs();
  Result<torch::ScalarType> dtype = ResolvePrecision(args.precision, *device);
  if (!dtype.ok()) return Fail(kWorkerExitModel, dtype.status().message());
#ifdef FRAMEMILL_WITH_CUDA
  // Frame size is fixed for a job: let cuDNN pick the fastest kernels once per shape.
  if (device->is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
#endif
  Result<std::unique_ptr<FrameModel>> model =
      LoadTorchScriptModel(args.model_fd, args.model_label, *device, *dtype);
  if (!model.ok()) return Fail(kWorkerExitModel, model.status().message());
  model_ = std::move(*model);
  runner_ = std::make_unique<BatchRunner>(*model_);
  nvml_ = std::make_unique<NvmlMemory>(PciBusId(*device));
  Result<std::pair<int64_t, int64_t>> size = ProbeOutputSize(*model_, kProbeSize);
  if (!size.ok()) return Fail(kWorkerExitModel, size.status().message());
  ch_.probe_out_width.store(static_cast<uint32_t>(size->first));
  ch_.probe_out_height.store(static_cast<uint32_t>(size->second));
  CopyString(ch_.device, device->str());
  PublishTelemetry(ch_.telemetry, *device, nvml_.get());
  ch_.state.store(WorkerState::kReady, std::memory_order_release);
  control_->wake.post();
  LogDebug("worker " + std::to_string(channel_) + ": model " + args.model_label + " loaded on " +
           device->str() + " in " + std::to_string(MonotonicMs() - t0) + " ms");

  while (true) {
    ChunkRequest rq{};
    PopResult p = ch_.requests.TryPop(&rq);
    if (p == PopResult::kCorrupt) return Fail(kWorkerExitAttach, "request ring corrupted");
    if (p == PopResult::kEmpty) {
      auto deadline = boost::posix_time::microsec_clock::universal_time() +
                      boost::posix_time::milliseconds(kIdleWaitMs);
      try {
        (void)ch_.request_posted.timed_wait(deadline);
      } catch (const boost::interprocess::interprocess_exception&) {
        // EINTR from a signal: an early wake-up, nothing more.
      }
      if (!SupervisorAlive()) return kWorkerExitOrphaned;
      PublishTelemetry(ch_.telemetry, *device, nvml_.get());
      continue;
    }
    if (rq.kind == ChunkRequest::kStop) {
      ch_.state.store(WorkerState::kExited, std::memory_order_release);
      control_->wake.post();
      return kWorkerExitOk;
    }
    if (rq.kind == ChunkRequest::kWarmup) {
      Warmup(rq);
      continue;
    }
    Publish(Process(rq));
  }
}

}  // namespace

int RunWorker(const WorkerArgs& args) {
  // Die with the supervisor: an orphaned worker would hold GPU memory forever.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Every batch allocates the same large tensors (the model's activations on the CPU, and the
  // conversions). glibc serves each one from a fresh mmap, or trims the heap after it, so every
  // batch page-faulted its memory in again: a third of a CPU worker's time went to the kernel's
  // page-fault path. Serve them from the heap and keep it: the heap stays at the peak of one
  // batch, a flat figure that the RSS recycle limit reads as it should.
  ::mallopt(M_MMAP_MAX, 0);
  ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  Result<SharedMemory> shm = SharedMemory::Open(args.control);
  if (!shm.ok()) {
    LogError("cannot attach: " + shm.status().message());
    return kWorkerExitAttach;
  }
  auto* control = static_cast<ControlHeader*>(shm->data());
  if (shm->size() < sizeof(ControlHeader) || control->magic != kControlMagic ||
      control->version != kProtocolVersion || control->header_bytes != sizeof(ControlHeader) ||
      control->channel_bytes != sizeof(WorkerChannel)) {
    LogError("cannot attach to " + args.control +
             ": it was made by a framemill with another "
             "shared-memory layout (this worker speaks protocol version " +
             std::to_string(kProtocolVersion) + "); use matching binaries");
    return kWorkerExitAttach;
  }
  if (args.channel < 0 || static_cast<uint32_t>(args.channel) >= control->channel_count) {
    LogError("channel " + std::to_string(args.channel) + " out of range");
    return kWorkerExitAttach;
  }
  // The parent may have died between spawning us and the prctl above.
  if (::getppid() != control->supervisor_pid) return kWorkerExitOrphaned;
  Worker worker(control, args.channel);
  return worker.Run(args);
}

}  // namespace framemill
