// Face mode in the worker: a face model (GPEN, GFPGAN, CodeFormer: [n,3,S,S] -> [n,3,S*k,S*k])
// never sees whole frames. For a batch of frames and their FaceWarps (common/face_warp.h, as the
// supervisor wrote them into the arena slot) the compositor
//
//   1. crops: samples each present face's S x S crop out of its frame, bilinearly, at
//      inverse(to_crop) (u, v) for every crop pixel (u, v);
//   2. runs the face model on the crops, `per_call` crops per call, the last call padded with
//      zero crops: one input shape per job, so cuDNN's autotuning searches once (the reason
//      batch_runner.cpp pads a chunk's short last batch); a batch without faces makes no call;
//   3. pastes: over the frame pixels the crop square covers (its bounding box, clipped to the
//      frame) samples the model's output at to_crop (x, y) (for an S*k output the same point of
//      the same square: u' = (u + 0.5) k - 0.5) and blends it in through a feathered mask,
//      out = frame (1 - m) + face m, with m = 1 inside the crop, falling linearly to 0 over
//      `blend` crop pixels towards the crop's edges (the pixel edges at -0.5 and S - 0.5), 0
//      outside. Faces overlapping one another are pasted in order (each over the result of
//      those before it).
//
// A pixel outside every face's mask is the input's, bit for bit (it is never written, or is
// selected unchanged where m = 0). The face's output is clamped to [0, 1] before the blend.
//
// All in torch ops on the frames' device, the same code on the CPU and on CUDA (a GPU machine
// has no OpenCV). The sampling runs in float32 whatever the model's dtype: half precision holds
// a normalised coordinate to 1/2048, half a pixel across a 1080p frame. torch's grid_sample takes
// coordinates normalised to [-1, 1] over the pixel edges (align_corners=false), so pixel x of a
// side of n lies at (2x + 1) / n - 1; at crop side S and at S*k the same point of the square has
// the same normalised coordinate, which is how the k of the paste comes for free.
// Padding "border" both ways: a crop that reaches past the frame's edge (a face at the edge) gets
// the edge's pixels repeated rather than black, which a face model would answer with a dark rim
// and ringing inside the frame; the pasted region is clipped to the frame anyway, so the
// repeated pixels never reach the output as such.
//
// Not thread-safe; holds a reference to the model, which must outlive it.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "common/face_warp.h"
#include "common/status.h"
#include "worker/model/frame_model.h"

namespace framemill {

// A job's face settings, from its arena geometry (common/shm_protocol.h).
struct FaceSettings {
  int64_t slots = 0;     // FaceWarps per frame; 0 = whole-frame mode (no compositing)
  int64_t size = 0;      // S, the crop side in pixels (kMinFaceSize..kMaxFaceSize)
  int64_t blend = 0;     // feather width in crop pixels; 0 = a hard edge
  int64_t per_call = 1;  // crops per face model call (the request's batch)
};

// What a compositor did, for tests and log lines.
struct FaceCompositeStats {
  int64_t faces = 0;        // faces composited
  int64_t model_calls = 0;  // face model calls made
};

class FaceCompositor {
 public:
  FaceCompositor(FrameModel& face_model, const FaceSettings& settings);

  // `frames`: the model input of a batch, float or half [n,3,H,W], RGB in [0,1], on the model's
  // device. `warps`: the FaceWarps of its first `frames_with_faces` frames (<= n), `slots` per
  // frame (frame f's at [f*slots, (f+1)*slots)); an entry with `present` 0 is skipped, and frames
  // from `frames_with_faces` on (a short batch's padding rows) have none. Composites into `frames`
  // in place (the caller hands its batch over: a copy of a 1080p batch costs 13 ms a frame on a
  // CPU core) and returns it; on an error `frames` may hold some faces already.
  // Errors: the face model's (kOutOfMemory, kModelInvalid) as they come; kModelInvalid for an
  // output that is not [per_call, 3, S*k, S*k] with a whole k >= 1; kInternal for a warp that is
  // not invertible or not finite (the supervisor's bug); kOutOfMemory or kModelInvalid when a
  // torch op of the compositing itself raises.
  Result<torch::Tensor> Run(const torch::Tensor& frames, const FaceWarp* warps,
                            int64_t frames_with_faces);

  const FaceCompositeStats& stats() const { return stats_; }

 private:
  FrameModel& model_;
  FaceSettings settings_;
  FaceCompositeStats stats_;
};

// One full call's worth of random crops through the face model (the warm-up of face mode): the
// shape, dtype and memory format of a real call. Returns the model's error, if any.
Status WarmUpFaceModel(FrameModel& face_model, const FaceSettings& settings);

}  // namespace framemill
