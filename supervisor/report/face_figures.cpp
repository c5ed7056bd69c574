#include "supervisor/report/face_figures.h"

#include <cstdio>

namespace framemill {

nlohmann::json FaceFigures::ToJson() const {
  return {{"frames", frames},           {"frames_without_faces", frames_without_faces},
          {"faces_found", faces_found}, {"faces_per_second", faces_per_second},
          {"tracks", tracks},           {"detection_s", detection_s}};
}

std::string FaceFigures::Summary() const {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%lld in %lld frames (%.2f per second of video), %lld frames without a face, %d "
                "tracks",
                static_cast<long long>(faces_found), static_cast<long long>(frames),
                faces_per_second, static_cast<long long>(frames_without_faces), tracks);
  return line;
}

FaceFigures FaceFiguresOf(const FaceTable& table, double frame_rate) {
  FaceFigures f;
  f.present = true;
  f.frames = static_cast<int64_t>(table.frames.size());
  f.frames_without_faces = table.stats.frames_without_faces;
  f.faces_found = table.stats.faces_found;
  f.faces_per_second = frame_rate > 0 && f.frames > 0
                           ? f.faces_found * frame_rate / static_cast<double>(f.frames)
                           : 0.0;
  f.tracks = table.stats.tracks;
  f.detection_s = table.stats.detection_s;
  return f;
}

}  // namespace framemill
