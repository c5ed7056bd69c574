// Face mode's wire format: how the supervisor tells a worker where the faces of a frame are and
// how each is turned into the face model's square input. One FaceWarp per face; a slot of the
// frame arena holds `ArenaGeometry::face_slots` of them per frame after its output frames
// (shm_protocol.h), those in use first (`present` = 1), the rest zero.
//
// Coordinates are pixel coordinates with pixel centres at whole numbers (OpenCV's convention:
// the top-left pixel's centre is (0, 0)), in the frame as the model sees it (upright, the
// arena's in_width x in_height), and in the crop of face_size x face_size pixels (the face
// model's input; its output may be face_size * k, the same square scaled).
//
//   crop (u, v) = to_crop * (x, y, 1):   u = m[0] x + m[1] y + m[2],  v = m[3] x + m[4] y + m[5]
//
// A similarity (rotation, uniform scale, shift) in practice, but the worker takes any invertible
// affine map. Plain values, no OpenCV: the worker on a GPU machine has none.
#pragma once

#include <cstdint>

namespace framemill {

// The most faces one frame may carry to a worker (job key `max_faces` is bounded by it).
inline constexpr uint32_t kMaxFacesPerFrame = 16;
// Bounds of the face model's square input side, pixels (job key `face_size`).
inline constexpr uint32_t kMinFaceSize = 32;
inline constexpr uint32_t kMaxFaceSize = 2048;

struct FaceWarp {
  float to_crop[6];  // frame pixel -> crop pixel, row-major 2x3
  uint32_t present;  // 1 = a face; 0 = an unused entry (the rest of the frame's entries too)
  uint32_t track;    // which track the face belongs to (stable across frames), for log lines
};
static_assert(sizeof(FaceWarp) == 32, "FaceWarp is part of the shared-memory protocol");

}  // namespace framemill
