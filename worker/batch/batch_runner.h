// Runs one chunk of frames through the model, batch by batch, from the arena's input slot to its
// output slot:
//
//   frames as bytes, rgb24, rgb48 or YUV 4:2:0 ──copy──► device ──► RGB float [N,3,H,W] in [0,1]
//   (frame_convert.h) ──► model ──► clamp, x255 (x65535), round, uint8 (16-bit), [N,H,W,3] on
//   the device ──copy──► straight into the arena's output slot
//
// In face mode (ChunkFrames::face.slots > 0) the model is a face model and never sees the whole
// frames: between the two conversions the batch's faces are cropped, run and pasted back
// (face_composite.h), and the output frames are the input's size.
//
// Integers cross the bus (8-bit: a quarter of float's bytes; YUV 4:2:0 half of rgb24's; 16-bit:
// half of float's) and every conversion runs on the device, with the same torch code on the CPU
// and on CUDA.
// On CUDA the copies run on two streams of their own (one up, one down) beside the compute
// stream, with two device buffers per direction, so that batch k+1's upload and batch k-1's
// download overlap batch k's compute; the host waits once, at the end of the chunk. The copies
// run straight between the arena and the device when the worker has page-locked the arena
// (`ChunkFrames::pinned`). Otherwise they are staged: two page-locked host buffers per direction,
// the host copying batch k+1's input into one and batch k-2's output out of one while the device
// works, and waiting on a batch's own copy only when its buffer is needed again. That costs the
// host a copy of every byte (memory bandwidth, beside the device's work) and spares the worker
// page-locking the whole arena (`page_lock_arena` in common/config.h says what that costs). On the
// CPU the same steps run in line, with no intermediate copy of the output.
//
// Chunks back to back (`ChunkFrames::overlap_next`, on CUDA): a chunk's last download need not
// hold up the next chunk. Run then returns once that download is queued, with OutputPending()
// true, and the caller queues the next chunk before it calls FinishOutput(), which waits for the
// download (staged: and copies the last two batches' outputs from the host buffers into the
// arena); the next chunk's first upload and model call overlap it. (A chunk's output is complete
// only after FinishOutput: its caller must not report it before.) Without this, the device idled
// for the length of every chunk's last download: 6.4 ms of 8 frames of 5120x2880 against 66 ms of
// model (BENCHMARKS.md, "Chunks back to back"); staged, also for the host's last two copies.
//
// Not thread-safe: one per worker process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"
#include "worker/batch/batch_profile.h"
#include "common/face_warp.h"
#include "worker/batch/face_composite.h"
#include "worker/batch/frame_convert.h"
#include "worker/model/frame_model.h"

namespace framemill {

struct ChunkFrames {
  const uint8_t* in = nullptr;  // frames * layout.FrameBytes() bytes
  uint8_t* out = nullptr;       // frames * OutFrameBytes() bytes
  int64_t frames = 0;
  int64_t batch = 1;
  InputLayout layout;  // the input frames' format and size
  int64_t out_h = 0, out_w = 0;
  FrameFormat out_format = FrameFormat::kRgb24;  // kRgb24 or kRgb48
  int64_t first_frame = 0;  // the chunk's first frame in the source (for `before_batch`)
  bool pinned = false;      // in/out are page-locked (cudaHostRegister); else copies are staged
  // The caller runs the next chunk before it needs this one's output (see the top): on CUDA, Run
  // may return before the last download ends.
  bool overlap_next = false;
  // Face mode: `face` from the arena geometry (per_call: the crops per face model call), and
  // `faces` the chunk's frames * face.slots FaceWarps (frame f's at [f * slots, (f + 1) * slots)),
  // read while the chunk runs. face.slots 0 (the default): whole frames, `faces` unused.
  FaceSettings face;
  const FaceWarp* faces = nullptr;

  int64_t OutFrameBytes() const {
    return static_cast<int64_t>(
        FrameBytes(out_format, static_cast<uint32_t>(out_w), static_cast<uint32_t>(out_h)));
  }
};

class BatchRunner {
 public:
  explicit BatchRunner(FrameModel& model);
  ~BatchRunner();
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // Runs the chunk. `before_batch(first_frame, frames)` is called before each batch starts
  // (fault injection); `after_batch(frames)` once it is queued (telemetry, heartbeat). Returns
  // when every output byte is in `c.out`, or with an error (model raised, wrong output shape),
  // after the device has finished with the chunk's memory either way; except that with
  // `c.overlap_next` an ok Run may leave the chunk's last download running (OutputPending()).
  // A chunk whose output is pending may still be running when the next Run starts: the next
  // chunk's batches queue behind it on the device.
  Status Run(const ChunkFrames& c, const std::function<void(int64_t, int64_t)>& before_batch,
             const std::function<void(int64_t)>& after_batch);

  // The last ok Run left its download running: its output is not all in its arena yet.
  bool OutputPending() const { return output_pending_; }
  // Waits until the pending chunk's output is all in its arena (at once when none is pending).
  // An error when the device failed meanwhile: that chunk's output cannot be trusted.
  Status FinishOutput();

  // The profile's sums so far (FRAMEMILL_WORKER_PROFILE=1 at construction), else null.
  const ProfileSums* profile() const { return profile_.sums(); }

  // A model that takes one batch size only (a package made for one shape): a chunk's short last
  // batch runs padded to the full batch on the CPU too. (On CUDA every batch runs at the full
  // shape already.)
  void set_pad_short_batches(bool pad) { pad_short_batches_ = pad; }

 private:
  Status RunOnCpu(const ChunkFrames& c, const std::function<void(int64_t, int64_t)>& before_batch,
                  const std::function<void(int64_t)>& after_batch);
  FrameModel& model_;
  bool pad_short_batches_ = false;
  bool output_pending_ = false;
  int64_t pending_frames_ = 0;  // the pending chunk's, for the profile
  struct CudaState;  // streams, events, device buffers (batch_runner_cuda.h; CUDA builds only)
  std::unique_ptr<CudaState> cuda_;
  BatchProfile profile_;  // FRAMEMILL_WORKER_PROFILE=1: where the time goes
};

// Checks a model's output for a batch against [b, 3, oh, ow].
Status CheckOutputShape(const torch::Tensor& y, int64_t b, int64_t oh, int64_t ow);

}  // namespace framemill
