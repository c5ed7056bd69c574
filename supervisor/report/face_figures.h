// The face figures of a face-mode job (job key `"mode": "faces"`): the `faces` object of its
// result.json, filled from the face table the job ran with (supervisor/faces/face_table.h).
// Plain values; thread-compatible.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "supervisor/faces/face_table.h"

namespace framemill {

struct FaceFigures {
  bool present = false;  // a face-mode job: result.json has "faces"
  int64_t frames = 0;    // frames the table covers
  int64_t frames_without_faces = 0;
  int64_t faces_found = 0;  // faces over all frames (the crops the model ran on)
  // faces_found per second of video (frames / frame rate): how many crops each second of the
  // video costs the model.
  double faces_per_second = 0;
  int tracks = 0;
  double detection_s = 0;  // BlazeFace's time over all frames, summed over threads; 0 for a table
                           // read from a file

  nlohmann::json ToJson() const;  // {"frames", "frames_without_faces", "faces_found", ...}
  // "30 in 24 frames (31.25 per second of video), 4 frames without a face, 2 tracks": the run
  // summary's and the job report's line.
  std::string Summary() const;
};

// The figures of `table`; `frame_rate` frames per second (<= 0: faces_per_second 0).
FaceFigures FaceFiguresOf(const FaceTable& table, double frame_rate);

}  // namespace framemill
