// BatchRunner's CUDA path (batch_runner.h says how it overlaps copies and compute), compiled in
// CUDA builds only.
#include "worker/batch/batch_runner_cuda.h"

#ifdef FRAMEMILL_WITH_CUDA

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "common/clock.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace framemill {

Status BatchRunner::CudaState::ShapeBuffers(BatchProfile& profile, const ChunkFrames& c,
                                            const torch::Device& device) {
  CudaState& s = *this;
  const int64_t in_bytes = c.layout.FrameBytes();
  const torch::ScalarType out_type = OutputElementType(c.out_format);
  // Staged copies (an arena not page-locked): through page-locked host buffers, the host copying
  // between them and the arena while the device works on other batches.
  const bool staged = !c.pinned;
  const std::array<int64_t, 6> shape = {
      c.batch, in_bytes, c.out_h, c.out_w,
      static_cast<int64_t>(out_type) * 4 + static_cast<int64_t>(c.out_format), staged ? 1 : 0};
  if (shape != s.shape) {
    // A new frame size or batch: the buffers are made again once the device is idle (a chunk
    // whose output is pending may still be downloading from them).
    try {
      s.up_stream.synchronize();
      c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
      s.down_stream.synchronize();
      for (auto& buf : s.buffers) Flush(profile, buf);  // a pending chunk's last outputs
    } catch (const std::exception& e) {
      return Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
    }
    for (auto& buf : s.buffers) {
      auto opts = torch::TensorOptions().device(device).dtype(torch::kUInt8);
      buf.up = torch::empty({c.batch, in_bytes}, opts);
      buf.down = torch::empty(OutputFramesShape(c.out_format, c.batch, c.out_h, c.out_w),
                             opts.dtype(out_type));
      buf.host_up = torch::Tensor();
      buf.host_down = torch::Tensor();
      if (staged) {
        auto host = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true);
        buf.host_up = torch::empty({c.batch, in_bytes}, host);
        buf.host_down = torch::empty(OutputFramesShape(c.out_format, c.batch, c.out_h, c.out_w),
                                     host.dtype(out_type));
      }
    }
    s.shape = shape;
  }
  return Status::Ok();
}

// On this thread alone: torch's copy would spread it over its thread pool, whose threads then
// spin beside the decoder and the encoders.
void BatchRunner::CudaState::HostCopy(BatchProfile& profile, void* dst, const void* src,
                                      size_t bytes) {
  const uint64_t t0 = MonotonicUs();
  std::memcpy(dst, src, bytes);
  profile.AddHostCopy(static_cast<double>(MonotonicUs() - t0) / 1000.0);
}

// (Batch i-2's output, or the chunk's last two at its end or the next chunk's start.)
void BatchRunner::CudaState::Flush(BatchProfile& profile, Buffers& buf) {
  if (buf.pending_bytes == 0) return;
  buf.downloaded.synchronize();
  HostCopy(profile, buf.pending_dst, buf.host_down.data_ptr(), buf.pending_bytes);
  buf.pending_bytes = 0;
}

void BatchRunner::CudaState::DropPending(const uint8_t* begin, const uint8_t* end) {
  for (auto& buf : buffers) {
    if (buf.pending_dst >= begin && buf.pending_dst < end) buf.pending_bytes = 0;
  }
}

// Only the pending chunk's outputs: the buffers may already hold the next chunk's first batch,
// whose download the host must not wait for here (its compute has just been queued).
void BatchRunner::CudaState::FinishPending(BatchProfile& profile) {
  const uint8_t *begin = pending_begin, *end = pending_end;
  pending_begin = pending_end = nullptr;
  try {
    output_done.synchronize();
    for (auto& buf : buffers) {
      if (buf.pending_dst >= begin && buf.pending_dst < end) Flush(profile, buf);
    }
  } catch (...) {
    DropPending(begin, end);  // reported failed: its slot may be written again
    throw;
  }
}

void BatchRunner::CudaState::Upload(BatchProfile& profile, const ChunkFrames& c, int64_t i) {
  CudaState& s = *this;
  const int64_t in_bytes = c.layout.FrameBytes();
  const bool staged = !c.pinned;
  CudaState::Buffers& buf = s.buffers[i % 2];
  const int64_t off = i * c.batch, b = std::min(c.batch, c.frames - off);
  c10::cuda::CUDAStreamGuard on_up(s.up_stream);
  if (buf.used) buf.consumed.block(s.up_stream);
  torch::Tensor src =
      torch::from_blob(const_cast<uint8_t*>(c.in) + off * in_bytes, {b, in_bytes}, torch::kUInt8);
  if (staged) {
    // Batch i-2's upload has left the host buffer before it is written again.
    if (buf.used) buf.uploaded.synchronize();
    HostCopy(profile, buf.host_up.data_ptr(), c.in + off * in_bytes,
             static_cast<size_t>(b * in_bytes));
    src = buf.host_up.narrow(0, 0, b);
  }
  profile.Mark(i, ProfileMark::kUploadStart);
  buf.up.narrow(0, 0, b).copy_(src, /*non_blocking=*/true);
  profile.Mark(i, ProfileMark::kUploadEnd);
  buf.uploaded.record(s.up_stream);
}

Status BatchRunner::CudaState::RunBatches(BatchRunner& runner, const ChunkFrames& c,
                                          c10::cuda::CUDAStream compute,
                                          const std::function<void(int64_t, int64_t)>& before_batch,
                                          const std::function<void(int64_t)>& after_batch) {
  // (Named as in BatchRunner, whose members they are.)
  CudaState& s = *this;
  BatchProfile& profile_ = runner.profile_;
  FrameModel& model_ = runner.model_;
  const bool staged = !c.pinned;
  const torch::ScalarType out_type = OutputElementType(c.out_format);
  const size_t out_bytes = static_cast<size_t>(c.OutFrameBytes());
  auto out_frames = [&](int64_t off, int64_t b) {
    return torch::from_blob(c.out + off * out_bytes,
                            OutputFramesShape(c.out_format, b, c.out_h, c.out_w), out_type);
  };
  Status status = Status::Ok();
  const int64_t batches = (c.frames + c.batch - 1) / c.batch;
  Upload(profile_, c, 0);
  for (int64_t i = 0; i < batches; ++i) {
    CudaState::Buffers& buf = s.buffers[i % 2];
    const int64_t off = i * c.batch, b = std::min(c.batch, c.frames - off);
    before_batch(c.first_frame + off, b);
    // Queued now: it runs while this batch computes.
    if (i + 1 < batches) Upload(profile_, c, i + 1);
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
    WriteOutputFrames(*y, buf.down.narrow(0, 0, b), c.out_format, c.layout);
    profile_.Mark(i, ProfileMark::kFromModelEnd);
    buf.computed.record(compute);
    buf.used = true;
    // Download, on the down stream: straight into the arena, or staged into `host_down` once
    // batch i-2's output has left it.
    {
      c10::cuda::CUDAStreamGuard on_down(s.down_stream);
      if (staged) Flush(profile_, buf);
      buf.computed.block(s.down_stream);
      profile_.Mark(i, ProfileMark::kDownloadStart);
      if (staged) {
        buf.host_down.narrow(0, 0, b).copy_(buf.down.narrow(0, 0, b), /*non_blocking=*/true);
        buf.pending_dst = c.out + off * static_cast<int64_t>(out_bytes);
        buf.pending_bytes = static_cast<size_t>(b) * out_bytes;
      } else {
        out_frames(off, b).copy_(buf.down.narrow(0, 0, b), /*non_blocking=*/true);
      }
      profile_.Mark(i, ProfileMark::kDownloadEnd);
      buf.downloaded.record(s.down_stream);
    }
    after_batch(b);
  }
  return status;
}

Status BatchRunner::CudaState::RunChunk(BatchRunner& runner, const ChunkFrames& c,
                                        const std::function<void(int64_t, int64_t)>& before_batch,
                                        const std::function<void(int64_t)>& after_batch) {
  CudaState& s = *this;
  BatchProfile& profile_ = runner.profile_;
  const torch::Device device = runner.model_.device();
  try {
    FM_RETURN_IF_ERROR(ShapeBuffers(profile_, c, device));
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
  const bool staged = !c.pinned;
  c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
  Status status = Status::Ok();
  const int64_t batches = (c.frames + c.batch - 1) / c.batch;
  profile_.BeginChunk(batches);
  try {
    status = RunBatches(runner, c, compute, before_batch, after_batch);
  } catch (const std::exception& e) {
    status = Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
  // Back to back (ok): the last download keeps running while the caller queues the next chunk,
  // and staged, the last two outputs wait in the host buffers; FinishOutput waits for the
  // download and moves them (or the next chunk's first batch moves the older one, when it needs
  // its buffer), while the device computes the next chunk. Without this the device idled at
  // every chunk's end for its last download and, staged, the host's copies of two batches.
  try {
    if (status.ok() && c.overlap_next) {
      s.output_done.record(s.down_stream);
      s.pending_begin = c.out;
      s.pending_end = c.out + c.frames * c.OutFrameBytes();
      runner.output_pending_ = true;
      runner.pending_frames_ = c.frames;
      return status;
    }
    // Staged: the chunk's last two outputs, from the host buffers into the arena, the older
    // first (its copy runs while the device computes the last batch). A failed chunk's are
    // dropped (a pending chunk's before it stay, for FinishOutput).
    if (status.ok() && staged) {
      for (int64_t i = std::max<int64_t>(0, batches - 2); i < batches; ++i) {
        Flush(profile_, s.buffers[i % 2]);
      }
    }
    s.up_stream.synchronize();
    compute.synchronize();
    s.down_stream.synchronize();
  } catch (const std::exception& e) {
    if (status.ok()) status = Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
  if (!status.ok()) DropPending(c.out, c.out + c.frames * c.OutFrameBytes());
  if (status.ok()) {
    profile_.EndChunk(c.frames);
  } else {
    profile_.AbandonChunk();
  }
  return status;
}

}  // namespace framemill

#endif  // FRAMEMILL_WITH_CUDA
