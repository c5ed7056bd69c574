// A face table: for each frame of a stretch of video, the FaceWarps (common/face_warp.h) that face
// mode sends the workers with it, and the figures of how they were found. Made by the face pass
// (face_pass.h); written to a file by `framemill faces VIDEO --table FILE` so that a machine
// without OpenCV can run face mode from it (job key `face_table`).
//
// File: one JSON document (version kFaceTableVersion), written atomically (temp, fsync, rename):
//   {"format": "framemill-face-table", "version": 1, "width": W, "height": H, "face_size": S,
//    "face_margin": M, "video_frames": V, "first_frame": F, "frame_count": N, "stats": {...},
//    "frames": [[[track, m0, m1, m2, m3, m4, m5], ...], ...]}      N lists, one per frame
// m0..m5 are FaceWarp::to_crop, each written as the shortest decimal that reads back as the same
// float (so the table round-trips exactly). About 70 bytes per face: a 30,000-frame video with one
// face per frame is about 2.1 MB (face_table_test measures it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/face_warp.h"
#include "common/status.h"

namespace framemill {

inline constexpr int kFaceTableVersion = 1;
// The largest table file read (16 faces a frame for about 2 hours at 30 fps).
inline constexpr int64_t kMaxFaceTableBytes = int64_t{1} << 30;

struct FaceTableStats {
  int64_t frames_without_faces = 0;
  int64_t faces_found = 0;   // faces over all frames, after tracking (filled gaps included)
  int64_t faces_filled = 0;  // of those, interpolated over a missed detection
  int tracks = 0;
  std::vector<int64_t> faces_per_frame;  // histogram: [k] = frames with k faces
  double detection_s = 0;  // detection time summed over frames (threads overlap), monotonic
  double detection_ms_per_frame = 0;
  int threads = 0;  // detection threads
};

struct FaceTable {
  int width = 0;  // the frames as the model sees them (upright), pixels
  int height = 0;
  int face_size = 0;  // S of the crops the warps map to
  double face_margin = 0;
  int64_t video_frames = 0;                   // frames of the whole video it was made from
  int64_t first_frame = 0;                    // the video's frame that frames[0] is
  std::vector<std::vector<FaceWarp>> frames;  // per frame, the faces (present = 1), largest first
  FaceTableStats stats;

  // Fills stats' counts from `frames` (not the detection times).
  void CountFaces();
};

nlohmann::json ToJson(const FaceTableStats& stats);

// Writes `table` to `path` atomically. Errors: kOutputInvalid with the reason.
Status WriteFaceTable(const std::string& path, const FaceTable& table);

// Reads a table file, checking its format, version and every value (a matrix must be finite and
// invertible, a frame holds at most kMaxFacesPerFrame faces). Errors: kInputMissing (no file),
// kInputInvalid naming the file and what is wrong.
Result<FaceTable> ReadFaceTable(const std::string& path);

// What a job needs of a table: frames [first_frame, first_frame + frames) of a video of
// video_frames frames of width x height, crops of face_size.
struct FaceTableNeed {
  int width = 0;
  int height = 0;
  int face_size = 0;
  int64_t video_frames = 0;
  int64_t first_frame = 0;
  int64_t frames = 0;
};

// Whether `table` fits `need`. Errors: kInvalidJob naming `what` (the file) and the value that
// differs.
Status CheckFaceTable(const FaceTable& table, const FaceTableNeed& need, const std::string& what);

}  // namespace framemill
