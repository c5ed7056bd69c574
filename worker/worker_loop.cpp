#include "worker/worker_loop.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <malloc.h>
#include <map>
#include <optional>
#include <string_view>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/torch.h>

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/Context.h>
#endif

#include "common/clock.h"
#include "common/env_knobs.h"
#include "common/log_lines.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/shm_validate.h"
#include "worker/arena_pages.h"
#include "worker/batch/batch_runner.h"
#include "worker/batch/cpu_allocator.h"
#include "worker/batch/face_composite.h"
#include "worker/batch/frame_convert.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"
#include "worker/model/tiled_model.h"
#include "worker/nvml_memory.h"
#include "worker/telemetry.h"
#include "worker/worker_hooks.h"

namespace framemill {
namespace {

constexpr int kIdleWaitMs = 200;  // wake-up period while idle: heartbeat and parent check
// FRAMEMILL_WORKER_OVERLAP_CHUNKS=always: how long a held result waits for the next request.
// Long enough that a loaded 2-core machine's decoder always supplies the next chunk first (with
// 1 s, the test that crashes a worker holding a chunk found the chunk reported early now and
// then in the full suite); the job's last chunk waits this long once.
constexpr int kHeldWaitMs = 5000;

// Chunks back to back (worker/batch/batch_runner.h): a chunk's result is held while the next chunk
// starts, and reported once its output is complete. FRAMEMILL_WORKER_OVERLAP_CHUNKS (a
// diagnostic, like FRAMEMILL_WORKER_PROFILE): unset, where it helps (CUDA with a page-locked
// arena); "0", never (the A/B in BENCHMARKS.md); "always", every result is held, also on the CPU,
// where nothing is left to overlap: the tests drive the holding where no GPU runs.
enum class Overlap { kAuto, kOff, kAlways };

Overlap OverlapFromEnvironment() {
  const std::optional<std::string>& v = Knob(EnvKnob::kWorkerOverlapChunks);
  if (!v || v->empty()) return Overlap::kAuto;
  if (*v == "0") return Overlap::kOff;
  if (*v == "always") return Overlap::kAlways;
  return Overlap::kAuto;
}

// How the arena's input frames lie, for the conversion to the model's input.
InputLayout ArenaLayout(const ArenaGeometry& arena) {
  InputLayout layout;
  layout.format = arena.in_format;
  layout.height = arena.in_height;
  layout.width = arena.in_width;
  layout.matrix = arena.in_matrix;
  layout.full_range = arena.in_full_range != 0;
  // YUV back out (frame_convert.h): the colour path stays in float, unclamped, both ways.
  layout.unclamped =
      arena.in_format == FrameFormat::kYuv420p && arena.out_format == FrameFormat::kYuv420p;
  return layout;
}

// A face-mode arena's face settings (face_composite.h); face crops go to the model `batch` at a
// time, as whole frames otherwise do. slots 0 in whole-frame mode.
FaceSettings ArenaFaces(const ArenaGeometry& arena, uint32_t batch) {
  FaceSettings face;
  face.slots = arena.face_slots;
  face.size = arena.face_size;
  face.blend = arena.face_blend;
  face.per_call = batch;
  return face;
}

// Random frames in the arena's layout through the same conversion as real ones: the model then
// sees the dtype, shape and memory format (channels-last) that cuDNN tunes for.
Status WarmUpWholeFrames(FrameModel& model, const InputLayout& layout, uint32_t batch) {
  try {
    torch::Tensor frames =
        torch::randint(0, 256, {static_cast<int64_t>(batch), layout.FrameBytes()},
                       torch::TensorOptions().device(model.device()).dtype(torch::kUInt8));
    Result<torch::Tensor> y = model.Run(ToModelInput(frames, layout, model.dtype()));
    if (!y.ok()) return y.status();
    (void)y->sum().item<float>();  // wait for the device to finish
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid, FirstLine(e.what()));
  }
}

class Worker {
 public:
  Worker(SharedMemory* control_shm, int channel, int wake_fd, WorkerHooks* hooks)
      : control_shm_(control_shm),
        control_(static_cast<ControlHeader*>(control_shm->data())),
        ch_(control_->channel),
        channel_(channel),
        wake_fd_(wake_fd),
        supervisor_pid_(control_->supervisor_pid),
        hooks_(hooks) {}

  int Run(const WorkerArgs& args);

 private:
  int Fail(int exit_code, const std::string& message);
  void SetState(WorkerState s) {
    ch_.state.store(static_cast<uint32_t>(s), std::memory_order_release);
  }
  bool SupervisorAlive() const { return ::getppid() == supervisor_pid_; }
  void WakeSupervisor();
  void WaitForRequest(int timeout_ms);
  uint8_t* Arena(const ChunkRequest& rq, std::string* error);
  ChunkResult Process(const ChunkRequest& rq);
  void Warmup(const ChunkRequest& rq);
  void Publish(const ChunkResult& result);
  // Reports the held chunk, if any, once its output is complete (as failed if the device failed).
  void PublishHeld();
  void LogCpuAllocator() const;

  SharedMemory* control_shm_;
  ControlHeader* control_;
  WorkerChannel& ch_;
  int channel_;
  int wake_fd_;
  int supervisor_pid_;  // read once at attach
  WorkerHooks* hooks_;  // the tests' seam (worker/worker_hooks.h): does nothing in the product
  std::unique_ptr<NvmlMemory> nvml_;
  std::unique_ptr<FrameModel> model_;  // a TiledModel around the loaded one
  TiledModel* tiled_ = nullptr;        // model_, for its fallbacks
  int64_t fallback_events_reported_ = 0;
  std::unique_ptr<BatchRunner> runner_;
  std::map<std::string, SharedMemory> arenas_;  // mapped by name; a job's arena, kept mapped
  ArenaPages pages_{channel_};  // the mapped arena's page-locking for the GPU
  Overlap overlap_ = OverlapFromEnvironment();
  // A chunk that is done but not reported: its last download may still run (batch_runner.h). It
  // is reported once the next chunk's first batch is queued, or when no request waits, and
  // always before a warm-up, a stop or another arena. If the worker dies meanwhile, the
  // supervisor sends it again, as it does every chunk a dead worker held.
  std::optional<ChunkResult> held_;
  // (FRAMEMILL_WORKER_OVERLAP_CHUNKS=always) how long the held chunk waits for the next request.
  uint64_t held_until_ms_ = 0;
};

int Worker::Fail(int exit_code, const std::string& message) {
  LogError("worker " + std::to_string(channel_) + ": " + message);
  CopyString(ch_.error, message);
  SetState(WorkerState::kFailed);
  WakeSupervisor();
  return exit_code;
}

void Worker::WakeSupervisor() { PostWakeUp(wake_fd_); }

void Worker::WaitForRequest(int timeout_ms) {
  pollfd p{wake_fd_, POLLIN, 0};
  Result<int> ready = WaitForWakeUp(&p, 1, timeout_ms);
  // A gone supervisor is seen by the parent check after the wait, not here.
  if (ready.ok() && *ready > 0 && (p.revents & POLLIN) != 0) (void)DrainWakeUps(wake_fd_);
}

// The arena of a request, mapped (once per job), its geometry checked against the mapping.
uint8_t* Worker::Arena(const ChunkRequest& rq, std::string* error) {
  char name[kNameBytes];
  std::memcpy(name, rq.arena_name, sizeof(name));
  name[kNameBytes - 1] = '\0';
  auto it = arenas_.find(name);
  if (it == arenas_.end()) {
    // One job at a time: an arena from an earlier job is no longer needed (nor written to).
    PublishHeld();
    pages_.Unregister();
    arenas_.clear();
    Result<SharedMemory> shm = SharedMemory::Open(name);
    if (!shm.ok()) {
      *error = shm.status().message();
      return nullptr;
    }
    it = arenas_.emplace(name, std::move(*shm)).first;
    pages_.NewArena();
  }
  Status s = ValidateArenaGeometry(rq.arena, it->second.size());
  if (!s.ok()) {
    *error = s.message();
    return nullptr;
  }
  pages_.Lock(it->second, (rq.arena.flags & kArenaPageLock) != 0, model_->device().is_cuda());
  return static_cast<uint8_t*>(it->second.data());
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
  uint8_t* base = Arena(rq, &error);
  if (base == nullptr) return fail(error);
  const ArenaGeometry& arena = rq.arena;
  if (rq.slot >= arena.slot_count || rq.frames > arena.chunk_frames || rq.batch == 0) {
    return fail("request out of the arena's bounds");
  }
  ChunkFrames c;
  c.in = arena.SlotIn(base, rq.slot);
  c.out = arena.SlotOut(base, rq.slot);
  c.frames = rq.frames;
  c.batch = rq.batch;
  c.layout = ArenaLayout(arena);
  c.out_h = arena.out_height;
  c.out_w = arena.out_width;
  c.out_format = arena.out_format;
  c.first_frame = static_cast<int64_t>(rq.first_frame);
  c.pinned = pages_.registered();
  c.overlap_next = overlap_ != Overlap::kOff;
  c.face = ArenaFaces(arena, rq.batch);
  if (c.face.slots > 0) c.faces = arena.SlotFaces(base, rq.slot);
  Status hooked = hooks_->BeforeChunk(c.first_frame, c.frames);
  if (!hooked.ok()) return fail(hooked.message());
  const std::vector<SharedSpan> shared = {{control_shm_->data(), control_shm_->size()},
                                          {base, static_cast<size_t>(arena.data_offset)}};
  Status s = runner_->Run(
      c, [this, &shared](int64_t first, int64_t n) { hooks_->BeforeBatch(first, n, shared); },
      [this](int64_t n) {
        // The first batch is queued: the chunk before, if held, has overlapped it.
        PublishHeld();
        ch_.telemetry.frames_done.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        PublishTelemetry(ch_.telemetry, model_->device(), nvml_.get());
      });
  // What out-of-memory errors changed, failed chunk or not.
  const ModelFallbacks& fb = tiled_->fallbacks();
  // (Within the bounds the supervisor checks: millions of tiles per call are possible, in theory.)
  result.fallback_events = static_cast<uint32_t>(
      std::min<int64_t>(fb.events - fallback_events_reported_, kMaxFallbackFigure));
  fallback_events_reported_ = fb.events;
  result.fallback_per_call =
      static_cast<uint32_t>(std::min<int64_t>(fb.per_call, kMaxFallbackFigure));
  result.fallback_tile = static_cast<uint32_t>(fb.tile);
  if (!s.ok()) return fail(s.message());
  result.frames_done = rq.frames;
  result.busy_us = MonotonicUs() - t0;
  ch_.telemetry.chunks_done.fetch_add(1, std::memory_order_relaxed);
  return result;
}

void Worker::Warmup(const ChunkRequest& rq) {
  std::string error;
  if (Arena(rq, &error) == nullptr || rq.batch == 0) return;  // the first real chunk reports it
  uint64_t t0 = MonotonicMs();
  torch::InferenceMode guard;
  const bool faces = rq.arena.face_slots > 0;  // the face model sees crops, never whole frames
  // Two calls: TorchScript's profiling executor records shapes on the first and compiles the
  // optimized graph on the second (on an H200 esrgan-slim-x2's second call took 126 ms, the
  // later ones 40; BENCHMARKS.md, "cuDNN's autotuning in the worker").
  Status s = Status::Ok();
  for (int call = 0; call < 2 && s.ok(); ++call) {
    s = faces ? WarmUpFaceModel(*model_, ArenaFaces(rq.arena, rq.batch))
              : WarmUpWholeFrames(*model_, ArenaLayout(rq.arena), rq.batch);
  }
  // Out of memory, say: the first real chunk meets it again and reports it.
  if (!s.ok()) LogWarn("worker " + std::to_string(channel_) + ": warm-up failed: " + s.message());
  PublishTelemetry(ch_.telemetry, model_->device(), nvml_.get());
  LogDebug("worker " + std::to_string(channel_) + ": warm-up at " +
           std::to_string(rq.arena.in_width) + "x" + std::to_string(rq.arena.in_height) +
           (faces ? " (face crops of " + std::to_string(rq.arena.face_size) + " px)" : "") +
           " took " + std::to_string(MonotonicMs() - t0) + " ms");
}

void Worker::LogCpuAllocator() const {
  if (!CachingCpuAllocatorInstalled()) return;
  const CpuAllocatorStats st = GetCpuAllocatorStats();
  if (st.allocations == 0) return;
  constexpr double kMiB = 1024.0 * 1024.0;
  char line[256];
  std::snprintf(line, sizeof line,
                "worker %d: CPU tensors: %llu of %llu large blocks reused, peak %.0f MiB in "
                "use, %.0f MiB kept for reuse",
                channel_, static_cast<unsigned long long>(st.reused),
                static_cast<unsigned long long>(st.allocations), st.peak_live_bytes / kMiB,
                st.cached_bytes / kMiB);
  LogInfo(line);
}

void Worker::PublishHeld() {
  if (!held_) return;
  ChunkResult result = *held_;
  held_.reset();
  Status s = runner_->FinishOutput();
  if (!s.ok()) {
    result.error = 1;
    result.frames_done = 0;
    CopyString(result.message, s.message());
  }
  Publish(result);
}

void Worker::Publish(const ChunkResult& result) {
  // The supervisor keeps at most a few requests in flight per worker, fewer than the ring holds,
  // so this loop only spins if the supervisor is stuck; it ends when the supervisor is gone.
  while (!ch_.results.TryPush(result)) {
    if (!SupervisorAlive()) std::_Exit(kWorkerExitOrphaned);
    ::usleep(1000);
  }
  WakeSupervisor();
}

int Worker::Run(const WorkerArgs& args) {
  ch_.pid.store(::getpid(), std::memory_order_release);
  CopyString(ch_.sandbox, args.sandbox);
  if (!args.sandbox_error.empty()) return Fail(kWorkerExitSandbox, args.sandbox_error);
  PublishTelemetry(ch_.telemetry, torch::Device(torch::kCPU));
  // The start's phases, for its log line: from main() (libraries loaded before it), the sandbox,
  // the device (CUDA's driver), the model's load, the probe.
  const uint64_t t_run = MonotonicMs();
  Result<torch::Device> device = ResolveDevice(args.device);
  if (!device.ok()) return Fail(kWorkerExitModel, device.status().message());
  uint64_t t0 = MonotonicMs();
  Result<torch::ScalarType> dtype = ResolvePrecision(args.precision, *device);
  if (!dtype.ok()) return Fail(kWorkerExitModel, dtype.status().message());
#ifdef FRAMEMILL_WITH_CUDA
  // cuDNN's algorithm search per input shape: off unless the job asks (common/config.h's
  // cudnn_autotune says why).
  if (device->is_cuda()) at::globalContext().setBenchmarkCuDNN(args.cudnn_autotune);
#endif
  Result<std::unique_ptr<FrameModel>> model =
      LoadFrameModel(args.model_fd, args.model_label, *device, *dtype, args.optimization);
  if (!model.ok()) return Fail(kWorkerExitModel, model.status().message());
  auto tiled = std::make_unique<TiledModel>(hooks_->WrapModel(std::move(*model)), args.tile,
                                            args.model_label);
  tiled_ = tiled.get();
  model_ = std::move(tiled);
  runner_ = std::make_unique<BatchRunner>(*model_);
  runner_->set_pad_short_batches(args.probe_batch > 1);
  tiled_->set_fixed_batch(args.probe_batch > 1);
  nvml_ = std::make_unique<NvmlMemory>(PciBusId(*device));
  const uint64_t t_loaded = MonotonicMs();
  Result<std::pair<int64_t, int64_t>> size =
      ProbeOutputSize(*model_, args.probe_width, args.probe_height, args.probe_batch);
  if (!size.ok()) return Fail(kWorkerExitModel, size.status().message());
  // The load's CPU copies of the weights and the probe's tensors are not asked for again.
  ReleaseCachedCpuMemory();
  ch_.probe_out_width.store(static_cast<uint32_t>(size->first));
  ch_.probe_out_height.store(static_cast<uint32_t>(size->second));
  CopyString(ch_.device, device->str());
  PublishTelemetry(ch_.telemetry, *device, nvml_.get());
  hooks_->BeforeReady();
  SetState(WorkerState::kReady);
  WakeSupervisor();
  const uint64_t t_ready = MonotonicMs();
  LogInfo("worker " + std::to_string(channel_) + ": model " + args.model_label + " ready on " +
          device->str() + ", " + std::to_string(t_ready - args.main_ms) +
          " ms after main(): sandbox " + std::to_string(t_run - args.main_ms) + " ms, device " +
          std::to_string(t0 - t_run) + " ms, load " + std::to_string(t_loaded - t0) +
          " ms, probe at " + std::to_string(args.probe_width) + "x" +
          std::to_string(args.probe_height) + "x" + std::to_string(args.probe_batch) + " " +
          std::to_string(t_ready - t_loaded) + " ms");

  if (overlap_ != Overlap::kAuto) {
    LogInfo("worker " + std::to_string(channel_) + ": chunks back to back " +
            (overlap_ == Overlap::kOff ? "off" : "always (every result held into the next chunk)") +
            " (FRAMEMILL_WORKER_OVERLAP_CHUNKS)");
  }
  while (true) {
    ChunkRequest rq{};
    PopResult p = ch_.requests.TryPop(&rq);
    if (p == PopResult::kCorrupt) return Fail(kWorkerExitAttach, "request ring corrupted");
    if (p == PopResult::kEmpty) {
      // No next chunk to overlap: the supervisor may be waiting for this one. (Holding every
      // result, the worker first waits a while for the next request, so that the tests find a
      // chunk held when the next one starts even where the worker is faster than its supply.)
      // The wait is for a request, to its deadline: a wake-up for anything else (the
      // supervisor's other pings) does not end it, which under load reported the chunk early.
      const uint64_t now = MonotonicMs();
      if (held_ && (overlap_ != Overlap::kAlways || now >= held_until_ms_)) {
        PublishHeld();
        continue;
      }
      WaitForRequest(held_ ? static_cast<int>(held_until_ms_ - now) : kIdleWaitMs);
      if (!SupervisorAlive()) return kWorkerExitOrphaned;
      PublishTelemetry(ch_.telemetry, *device, nvml_.get());
      continue;
    }
    if (rq.kind == ChunkRequest::kStop) {
      PublishHeld();
      LogCpuAllocator();
      SetState(WorkerState::kExited);
      WakeSupervisor();
      return kWorkerExitOk;
    }
    if (rq.kind == ChunkRequest::kWarmup) {
      PublishHeld();
      Warmup(rq);
      continue;
    }
    ChunkResult result = Process(rq);
    PublishHeld();  // (normally done at its first batch; not when it failed before)
    if (result.error == 0 && (runner_->OutputPending() || overlap_ == Overlap::kAlways)) {
      held_ = result;
      held_until_ms_ = MonotonicMs() + kHeldWaitMs;
    } else {
      Publish(result);
    }
    ReleaseIdleCpuBlocks();
  }
}

}  // namespace

int RunWorker(const WorkerArgs& args, WorkerHooks& hooks) {
  // Die with the supervisor: an orphaned worker would hold GPU memory forever.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Every batch allocates the same large tensors (the model's activations on the CPU, and the
  // conversions). glibc served each one from a fresh mmap, or trimmed the heap after it, so every
  // batch page-faulted its memory in again. Serve what is not LibTorch's from the heap and keep
  // it; LibTorch's CPU tensors come from a cache of blocks by size (worker/batch/cpu_allocator.h
  // says why glibc's heap alone is not enough for them). The process then stays at the peak of one
  // batch, a flat figure that the RSS recycle limit reads as it should.
  ::mallopt(M_MMAP_MAX, 0);
  ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  const std::optional<std::string>& cpu_allocator = Knob(EnvKnob::kWorkerCpuAllocator);
  if (!cpu_allocator || *cpu_allocator != "system") {
    InstallCachingCpuAllocator();
  }
  Result<SharedMemory> shm = SharedMemory::Open(args.control);
  if (!shm.ok()) {
    LogError("cannot attach: " + shm.status().message());
    return kWorkerExitAttach;
  }
  if (!ValidateControlHeader(shm->data(), shm->size()).ok()) {
    LogError("cannot attach to " + args.control +
             ": it was made by a framemill with another "
             "shared-memory layout (this worker speaks protocol version " +
             std::to_string(kProtocolVersion) + "); use matching binaries");
    return kWorkerExitAttach;
  }
  // The descriptor must be the socket the supervisor handed over.
  int type = 0;
  socklen_t len = sizeof(type);
  if (args.wake_fd < 0 || ::getsockopt(args.wake_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != SOCK_STREAM) {
    LogError("--wake-fd " + std::to_string(args.wake_fd) +
             " is not the socket the supervisor hands its workers");
    return kWorkerExitAttach;
  }
  // The parent may have died between spawning us and the prctl above.
  const auto* control = static_cast<const ControlHeader*>(shm->data());
  if (::getppid() != control->supervisor_pid) return kWorkerExitOrphaned;
  Worker worker(&*shm, args.channel, args.wake_fd, &hooks);
  return worker.Run(args);
}

}  // namespace framemill
