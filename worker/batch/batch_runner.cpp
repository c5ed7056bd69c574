#include "worker/batch/batch_runner.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "common/clock.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace framemill {
namespace {

// A batch's output: the model's on the whole frames `x`, or in face mode `x` with its faces
// composited (face_composite.h). `off`: the batch's first frame in the chunk; `b`: its real frames
// (a padded batch's rows past them have no faces).
Result<torch::Tensor> RunBatch(FrameModel& model, const ChunkFrames& c, const torch::Tensor& x,
                               int64_t off, int64_t b) {
  if (c.face.slots == 0) return model.Run(x);
  FaceCompositor compositor(model, c.face);
  return compositor.Run(x, c.faces + off * c.face.slots, b);
}

}  // namespace

Status CheckOutputShape(const torch::Tensor& y, int64_t b, int64_t oh, int64_t ow) {
  if (y.dim() == 4 && y.size(0) == b && y.size(1) == 3 && y.size(2) == oh && y.size(3) == ow) {
    return Status::Ok();
  }
  return Status(StatusCode::kModelInvalid, "model output has shape " + c10::str(y.sizes()) +
                                               ", expected [" + std::to_string(b) + ", 3, " +
                                               std::to_string(oh) + ", " + std::to_string(ow) +
                                               "]");
}

#ifdef FRAMEMILL_WITH_CUDA
// Two of everything, used alternately by even and odd batches.
struct BatchRunner::CudaState {
  static constexpr unsigned kHostWaits = cudaEventDisableTiming | cudaEventBlockingSync;
  struct Buffers {
    torch::Tensor up;    // uint8 [batch, frame bytes] on the device: the batch's input frames
    torch::Tensor down;  // [batch, oh, ow, 3] on the device, uint8 or int16: its output frames
    // Staged copies (an arena not page-locked): page-locked host buffers of the same shapes that
    // the copies go through, and the batch whose output waits in `host_down` for the host to move
    // it into the arena (frames [pending_off, pending_off + pending_frames) of the chunk).
    torch::Tensor host_up, host_down;
    int64_t pending_off = 0, pending_frames = 0;
    // The host waits on `uploaded` and `downloaded` (staged copies) asleep, not spinning: a
    // spinning wait would take a core from the decoder and the encoders for most of each batch.
    at::cuda::CUDAEvent uploaded{kHostWaits}, downloaded{kHostWaits};
    at::cuda::CUDAEvent consumed, computed;
    bool used = false;  // events recorded at least once
  };
  c10::cuda::CUDAStream up_stream;
  c10::cuda::CUDAStream down_stream;
  std::array<Buffers, 2> buffers;
  // A chunk left with its output pending (overlap_next): recorded after its last download.
  at::cuda::CUDAEvent output_done{kHostWaits};
  // batch, input frame bytes, oh, ow, output element type, staged the buffers were made for
  std::array<int64_t, 6> shape{};

  explicit CudaState(c10::DeviceIndex device)
      : up_stream(c10::cuda::getStreamFromPool(false, device)),
        down_stream(c10::cuda::getStreamFromPool(false, device)) {}
};
#else
struct BatchRunner::CudaState {};
#endif

BatchRunner::BatchRunner(FrameModel& model)
    : model_(model), profile_(/*on_device=*/model.device().is_cuda()) {
#ifdef FRAMEMILL_WITH_CUDA
  if (model_.device().is_cuda()) cuda_ = std::make_unique<CudaState>(model_.device().index());
#endif
}

BatchRunner::~BatchRunner() = default;

Status BatchRunner::RunOnCpu(const ChunkFrames& c,
                             const std::function<void(int64_t, int64_t)>& before_batch,
                             const std::function<void(int64_t)>& after_batch) {
  const int64_t in_bytes = c.layout.FrameBytes();
  const size_t out_bytes = static_cast<size_t>(c.OutFrameBytes());
  const torch::ScalarType out_type = OutputElementType(c.out_format);
  profile_.BeginChunk((c.frames + c.batch - 1) / c.batch);
  for (int64_t off = 0; off < c.frames; off += c.batch) {
    const int64_t b = std::min(c.batch, c.frames - off), i = off / c.batch;
    before_batch(c.first_frame + off, b);
    torch::Tensor frames =
        torch::from_blob(const_cast<uint8_t*>(c.in) + off * in_bytes, {b, in_bytes}, torch::kUInt8);
    profile_.Mark(i, ProfileMark::kToModelStart);
    const bool pad = pad_short_batches_ && b < c.batch;
    if (pad) {  // the rows past `b` repeat the last frame; their output is dropped
      frames = torch::cat({frames, frames.narrow(0, b - 1, 1).expand({c.batch - b, in_bytes})});
    }
    torch::Tensor x = ToModelInput(frames.to(model_.device()), c.layout, model_.dtype());
    profile_.Mark(i, ProfileMark::kModelStart);
    Result<torch::Tensor> y = RunBatch(model_, c, x, off, b);
    profile_.Mark(i, ProfileMark::kModelEnd);
    if (!y.ok()) return y.status();
    FM_RETURN_IF_ERROR(CheckOutputShape(*y, pad ? c.batch : b, c.out_h, c.out_w));
    if (pad) *y = y->narrow(0, 0, b);
    torch::Tensor dst =
        torch::from_blob(c.out + off * out_bytes, {b, c.out_h, c.out_w, 3}, out_type);
    // Written straight into the arena.
    WriteOutputFrames(*y, dst, c.out_format);
    profile_.Mark(i, ProfileMark::kFromModelEnd);
    after_batch(b);
  }
  profile_.EndChunk(c.frames);
  return Status::Ok();
}

Status BatchRunner::Run(const ChunkFrames& c,
                        const std::function<void(int64_t, int64_t)>& before_batch,
                        const std::function<void(int64_t)>& after_batch) {
  torch::InferenceMode guard;
  if (cuda_ == nullptr) {
    Status status = Status::Ok();
    try {
      status = RunOnCpu(c, before_batch, after_batch);
    } catch (const std::exception& e) {
      status = Status(StatusCode::kModelInvalid, FirstLine(e.what()));
    }
    if (!status.ok()) profile_.AbandonChunk();
    return status;
  }
#ifdef FRAMEMILL_WITH_CUDA
  CudaState& s = *cuda_;
  const torch::Device device = model_.device();
  const int64_t in_bytes = c.layout.FrameBytes();
  const torch::ScalarType out_type = OutputElementType(c.out_format);
  // Staged copies (an arena not page-locked): through page-locked host buffers, the host copying
  // between them and the arena while the device works on other batches.
  const bool staged = !c.pinned;
  const std::array<int64_t, 6> shape = {
      c.batch, in_bytes, c.out_h, c.out_w, static_cast<int64_t>(out_type), staged ? 1 : 0};
  if (shape != s.shape) {
    // A new frame size or batch: the buffers are made again once the device is idle (a chunk
    // whose output is pending may still be downloading from them).
    try {
      s.up_stream.synchronize();
      c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
      s.down_stream.synchronize();
    } catch (const std::exception& e) {
      return Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
    }
    for (auto& buf : s.buffers) {
      auto opts = torch::TensorOptions().device(device).dtype(torch::kUInt8);
      buf.up = torch::empty({c.batch, in_bytes}, opts);
      buf.down = torch::empty({c.batch, c.out_h, c.out_w, 3}, opts.dtype(out_type));
      buf.host_up = torch::Tensor();
      buf.host_down = torch::Tensor();
      if (staged) {
        auto host = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true);
        buf.host_up = torch::empty({c.batch, in_bytes}, host);
        buf.host_down = torch::empty({c.batch, c.out_h, c.out_w, 3}, host.dtype(out_type));
      }
    }
    s.shape = shape;
  }
  for (auto& buf : s.buffers) buf.pending_frames = 0;  // (a failed chunk may have left some)
  const size_t out_bytes = static_cast<size_t>(c.OutFrameBytes());
  auto out_frames = [&](int64_t off, int64_t b) {
    return torch::from_blob(c.out + off * out_bytes, {b, c.out_h, c.out_w, 3}, out_type);
  };
  // Staged: a host copy, timed for the profile. On this thread alone: torch's copy would spread
  // it over its thread pool, whose threads then spin beside the decoder and the encoders.
  auto host_copy = [&](void* dst, const void* src, size_t bytes) {
    const uint64_t t0 = MonotonicUs();
    std::memcpy(dst, src, bytes);
    profile_.AddHostCopy(static_cast<double>(MonotonicUs() - t0) / 1000.0);
  };
  // Staged: moves the output waiting in `buf.host_down` (batch i-2's, or the chunk's last two at
  // its end) into the arena, once its download has run.
  auto flush = [&](CudaState::Buffers& buf) {
    if (buf.pending_frames == 0) return;
    buf.downloaded.synchronize();
    host_copy(c.out + buf.pending_off * out_bytes, buf.host_down.data_ptr(),
              static_cast<size_t>(buf.pending_frames) * out_bytes);
    buf.pending_frames = 0;
  };
  c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
  Status status = Status::Ok();
  const int64_t batches = (c.frames + c.batch - 1) / c.batch;
  // Uploads batch i on the up stream, once the compute stream has converted batch i-2's input
  // out of the same buffer.
  auto upload = [&](int64_t i) {
    CudaState::Buffers& buf = s.buffers[i % 2];
    const int64_t off = i * c.batch, b = std::min(c.batch, c.frames - off);
    c10::cuda::CUDAStreamGuard on_up(s.up_stream);
    if (buf.used) buf.consumed.block(s.up_stream);
    torch::Tensor src =
        torch::from_blob(const_cast<uint8_t*>(c.in) + off * in_bytes, {b, in_bytes}, torch::kUInt8);
    if (staged) {
      // Batch i-2's upload has left the host buffer before it is written again.
      if (buf.used) buf.uploaded.synchronize();
      host_copy(buf.host_up.data_ptr(), c.in + off * in_bytes, static_cast<size_t>(b * in_bytes));
      src = buf.host_up.narrow(0, 0, b);
    }
    profile_.Mark(i, ProfileMark::kUploadStart);
    buf.up.narrow(0, 0, b).copy_(src, /*non_blocking=*/true);
    profile_.Mark(i, ProfileMark::kUploadEnd);
    buf.uploaded.record(s.up_stream);
  };
  profile_.BeginChunk(batches);
  try {
    upload(0);
    for (int64_t i = 0; i < batches; ++i) {
      CudaState::Buffers& buf = s.buffers[i % 2];
      const int64_t off = i * c.batch, b = std::min(c.batch, c.frames - off);
      before_batch(c.first_frame + off, b);
      if (i + 1 < batches) upload(i + 1);  // queued now: it runs while this batch computes
      // Compute, on the current stream.
      buf.uploaded.block(compute);
      profile_.Mark(i, ProfileMark::kToModelStart);
      // A short batch (a chunk's last) runs at the full batch shape, the rows past `b` holding
      // an earlier batch's frames: with cuDNN autotuning every new shape costs a search (1.2 s
      // for a 4-frame tail of `restore` at 1080p on an H200, against 62 ms of compute for the
      // padding), so the model sees one shape per job.
      torch::Tensor x = ToModelInput(buf.up, c.layout, model_.dtype());
      buf.consumed.record(compute);
      profile_.Mark(i, ProfileMark::kModelStart);
      Result<torch::Tensor> y = RunBatch(model_, c, x, off, b);
      profile_.Mark(i, ProfileMark::kModelEnd);
      if (!y.ok()) {
        status = y.status();
        break;
      }
      status = CheckOutputShape(*y, c.batch, c.out_h, c.out_w);
      if (!status.ok()) break;
      if (b < c.batch) *y = y->narrow(0, 0, b);
      if (buf.used) buf.downloaded.block(compute);  // batch i-2's download has left `down`
      WriteOutputFrames(*y, buf.down.narrow(0, 0, b), c.out_format);
      profile_.Mark(i, ProfileMark::kFromModelEnd);
      buf.computed.record(compute);
      buf.used = true;
      // Download, on the down stream: straight into the arena, or staged into `host_down` once
      // batch i-2's output has left it.
      {
        c10::cuda::CUDAStreamGuard on_down(s.down_stream);
        if (staged) flush(buf);
        buf.computed.block(s.down_stream);
        profile_.Mark(i, ProfileMark::kDownloadStart);
        if (staged) {
          buf.host_down.narrow(0, 0, b).copy_(buf.down.narrow(0, 0, b), /*non_blocking=*/true);
          buf.pending_off = off;
          buf.pending_frames = b;
        } else {
          out_frames(off, b).copy_(buf.down.narrow(0, 0, b), /*non_blocking=*/true);
        }
        profile_.Mark(i, ProfileMark::kDownloadEnd);
        buf.downloaded.record(s.down_stream);
      }
      after_batch(b);
    }
  } catch (const std::exception& e) {
    status = Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
  // Staged: the chunk's last two outputs, from the host buffers into the arena, the older first
  // (its copy runs while the device computes the last batch).
  if (status.ok() && staged) {
    try {
      for (int64_t i = std::max<int64_t>(0, batches - 2); i < batches; ++i) {
        flush(s.buffers[i % 2]);
      }
    } catch (const std::exception& e) {
      status = Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
    }
  }
  // Back to back (page-locked, ok): the last download keeps running while the caller queues
  // the next chunk; FinishOutput waits for it. Else nothing may still write into the arena, or
  // read a buffer, once we answer.
  try {
    if (status.ok() && c.overlap_next && !staged) {
      s.output_done.record(s.down_stream);
      output_pending_ = true;
      pending_frames_ = c.frames;
      return status;
    }
    s.up_stream.synchronize();
    compute.synchronize();
    s.down_stream.synchronize();
  } catch (const std::exception& e) {
    if (status.ok()) status = Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
  if (status.ok()) {
    profile_.EndChunk(c.frames);
  } else {
    profile_.AbandonChunk();
  }
  return status;
#else
  return Status(StatusCode::kInternal, "CUDA state without a CUDA build");
#endif
}

Status BatchRunner::FinishOutput() {
  if (!output_pending_) return Status::Ok();
  output_pending_ = false;
#ifdef FRAMEMILL_WITH_CUDA
  try {
    cuda_->output_done.synchronize();
  } catch (const std::exception& e) {
    profile_.AbandonChunk(/*oldest=*/true);
    return Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
#endif
  profile_.EndChunk(pending_frames_);
  return Status::Ok();
}

}  // namespace framemill
