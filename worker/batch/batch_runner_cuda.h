// BatchRunner's inside (batch_runner.h), for batch_runner.cpp and batch_runner_cuda.cpp alone:
// RunBatch, the one batch both paths run; and, in CUDA builds only, the CUDA path's state
// (BatchRunner::CudaState: streams, events, device and page-locked buffers) with the steps of a
// chunk on CUDA, defined in batch_runner_cuda.cpp. Other builds get an empty CudaState that is
// never made.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <torch/torch.h>

#include "common/status.h"
#include "worker/batch/batch_profile.h"
#include "worker/batch/batch_runner.h"
#include "worker/model/frame_model.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace framemill {

// A batch's output: the model's on the whole frames `x`, or in face mode `x` with its faces
// composited (face_composite.h). `off`: the batch's first frame in the chunk; `b`: its real frames
// (a padded batch's rows past them have no faces).
Result<torch::Tensor> RunBatch(FrameModel& model, const ChunkFrames& c, const torch::Tensor& x,
                               int64_t off, int64_t b);

#ifdef FRAMEMILL_WITH_CUDA
// Two of everything, used alternately by even and odd batches.
struct BatchRunner::CudaState {
  static constexpr unsigned kHostWaits = cudaEventDisableTiming | cudaEventBlockingSync;
  struct Buffers {
    torch::Tensor up;    // uint8 [batch, frame bytes] on the device: the batch's input frames
    torch::Tensor down;  // [batch, oh, ow, 3] on the device, uint8 or int16: its output frames
    // Staged copies (an arena not page-locked): page-locked host buffers of the same shapes that
    // the copies go through, and the batch whose output waits in `host_down` for the host to move
    // it into the arena: `pending_bytes` to `pending_dst` (its chunk's output slot: a chunk whose
    // output is pending may be the one before the chunk running now).
    torch::Tensor host_up, host_down;
    uint8_t* pending_dst = nullptr;
    size_t pending_bytes = 0;
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
  // Staged, its last two batches' outputs also wait in `host_down` (FinishPending moves them):
  // those whose destination is in [pending_begin, pending_end), its output slot.
  at::cuda::CUDAEvent output_done{kHostWaits};
  const uint8_t* pending_begin = nullptr;
  const uint8_t* pending_end = nullptr;
  // batch, input frame bytes, oh, ow, output element type, staged the buffers were made for
  std::array<int64_t, 6> shape{};

  explicit CudaState(c10::DeviceIndex device)
      : up_stream(c10::cuda::getStreamFromPool(false, device)),
        down_stream(c10::cuda::getStreamFromPool(false, device)) {}

  // BatchRunner::Run on CUDA, for `runner` (whose model, profile and pending output it uses).
  Status RunChunk(BatchRunner& runner, const ChunkFrames& c,
                  const std::function<void(int64_t, int64_t)>& before_batch,
                  const std::function<void(int64_t)>& after_batch);
  // BatchRunner::FinishOutput on CUDA: waits for the pending chunk's last download and, staged,
  // moves what waits in the host buffers into its arena slot. A CUDA error throws.
  void FinishPending(BatchProfile& profile);

 private:
  // The buffers for the chunk's shape: made again, once the device is idle and a pending output
  // has left them, when it changed.
  Status ShapeBuffers(BatchProfile& profile, const ChunkFrames& c, const torch::Device& device);
  // The chunk's batches: upload, compute, download, each on its stream. A model's error or a
  // wrong output shape ends them with that status; a CUDA error throws.
  Status RunBatches(BatchRunner& runner, const ChunkFrames& c, c10::cuda::CUDAStream compute,
                    const std::function<void(int64_t, int64_t)>& before_batch,
                    const std::function<void(int64_t)>& after_batch);
  // Staged: a host copy, timed for the profile.
  void HostCopy(BatchProfile& profile, void* dst, const void* src, size_t bytes);
  // Staged: moves the output waiting in `buf.host_down` into the arena, once its download has run.
  void Flush(BatchProfile& profile, Buffers& buf);
  // Staged: forgets the outputs bound for [begin, end) that wait in the host buffers (a failed
  // chunk's: a later Flush must never write them into a slot that may be reused).
  void DropPending(const uint8_t* begin, const uint8_t* end);
  // Uploads batch i on the up stream, once the compute stream has converted batch i-2's input
  // out of the same buffer.
  void Upload(BatchProfile& profile, const ChunkFrames& c, int64_t i);
};
#else
struct BatchRunner::CudaState {};
#endif

}  // namespace framemill
