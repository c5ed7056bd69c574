// Tracking: the faces detected in each frame of a stretch of video become tracks (one face
// followed from frame to frame, with an id that stays), smoothed over time so that the crops the
// face model sees do not jitter, with short misses filled so that a face is not left unrestored
// for a frame. Pure C++ (no OpenCV), deterministic; not thread-safe per call (no shared state).
//
// Method, in order:
//   1. Faces whose box is narrower than min_size (frame pixels) are dropped.
//   2. Association, frame by frame: every pair (a live track, a face of this frame) whose boxes
//      overlap by at least min_iou (intersection over union, against the track's last face) is a
//      candidate; the best overlaps are taken first (greedy), each track and face at most once. A
//      face left over starts a new track (ids 0, 1, 2, ... in order of first appearance). A track
//      is live while its last face is at most max_gap + 1 frames back.
//   3. Gaps: a track's missed frames (at most max_gap in a row, by 2.) are filled by linear
//      interpolation of its box and keypoints between the faces on either side (`filled`).
//   4. Smoothing: each keypoint and box value at frame f is the mean over frames f - r .. f + r of
//      the track, r = min(smooth_radius, frames to the track's first, to its last): a centred
//      window, so a face moving at a steady speed is not delayed, shrunk at the track's ends.
//      Jitter of independent per-frame noise falls by about sqrt(2 r + 1).
//   5. Per frame, the max_faces largest faces (box area) are kept.
#pragma once

#include <cstdint>
#include <vector>

#include "common/face.h"

namespace framemill {

struct FaceTrackOptions {
  int min_size = 32;      // box width, frame pixels
  int max_faces = 4;      // per frame, the largest kept
  float min_iou = 0.3f;   // the least box overlap that continues a track
  int max_gap = 2;        // frames a track may miss and still continue (and be filled)
  int smooth_radius = 2;  // R: the centred window is 2 R + 1 frames
};

struct TrackedFace {
  uint32_t track = 0;
  Face face;            // smoothed; the score is the detection's (a filled face: the lower one)
  bool filled = false;  // interpolated over a missed detection
};

struct FaceTracks {
  std::vector<std::vector<TrackedFace>> frames;  // per frame, largest first
  int tracks = 0;                                // tracks started
};

// `detections[i]`: the faces found in frame i (any order).
FaceTracks TrackFaces(const std::vector<std::vector<Face>>& detections,
                      const FaceTrackOptions& options);

}  // namespace framemill
