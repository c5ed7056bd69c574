#include "worker/batch/batch_runner.h"

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "worker/batch/batch_runner_cuda.h"

namespace framemill {

Result<torch::Tensor> RunBatch(FrameModel& model, const ChunkFrames& c, const torch::Tensor& x,
                               int64_t off, int64_t b) {
  if (c.face.slots == 0) return model.Run(x);
  FaceCompositor compositor(model, c.face);
  return compositor.Run(x, c.faces + off * c.face.slots, b);
}

Status CheckOutputShape(const torch::Tensor& y, int64_t b, int64_t oh, int64_t ow) {
  if (y.dim() == 4 && y.size(0) == b && y.size(1) == 3 && y.size(2) == oh && y.size(3) == ow) {
    return Status::Ok();
  }
  return Status(StatusCode::kModelInvalid, "model output has shape " + c10::str(y.sizes()) +
                                               ", expected [" + std::to_string(b) + ", 3, " +
                                               std::to_string(oh) + ", " + std::to_string(ow) +
                                               "]");
}

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
        torch::from_blob(c.out + off * out_bytes,
                         OutputFramesShape(c.out_format, b, c.out_h, c.out_w), out_type);
    // Written straight into the arena.
    WriteOutputFrames(*y, dst, c.out_format, c.layout);
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
  return cuda_->RunChunk(*this, c, before_batch, after_batch);
#else
  return Status(StatusCode::kInternal, "CUDA state without a CUDA build");
#endif
}

Status BatchRunner::FinishOutput() {
  if (!output_pending_) return Status::Ok();
  output_pending_ = false;
#ifdef FRAMEMILL_WITH_CUDA
  try {
    cuda_->FinishPending(profile_);
  } catch (const std::exception& e) {
    profile_.AbandonChunk(/*oldest=*/true);
    return Status(StatusCode::kModelInvalid, "CUDA: " + FirstLine(e.what()));
  }
#endif
  profile_.EndChunk(pending_frames_);
  return Status::Ok();
}

}  // namespace framemill
