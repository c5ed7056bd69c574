#include "common/face_setting.h"

#include <climits>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json_fields.h"

namespace framemill {

const char* Name(JobMode mode) { return mode == JobMode::kFaces ? "faces" : "frames"; }

std::optional<JobMode> ParseJobMode(const std::string& name) {
  if (name == "frames") return JobMode::kFrames;
  if (name == "faces") return JobMode::kFaces;
  return std::nullopt;
}

std::string InstalledFaceDetector() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));  // .../bin, or a build tree
  for (const std::string& candidate :
       {dir + "/../share/framemill/face-detector/" + kInstalledFaceDetector,
        dir + "/../.deps/face-detector/" + kInstalledFaceDetector}) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      char real[4096];
      return ::realpath(candidate.c_str(), real) != nullptr ? std::string(real) : candidate;
    }
  }
  return "";
}

void ReadFaceSetting(FieldReader& r, FaceSetting* face) {
  r.Int("face_size", &face->size, static_cast<int>(kMinFaceSize), static_cast<int>(kMaxFaceSize));
  r.Double("face_margin", &face->margin, kMinFaceMargin, kMaxFaceMargin);
  r.Int("face_min_size", &face->min_size, 1, kMaxFaceMinSize);
  r.Int("max_faces", &face->max_faces, 1, static_cast<int>(kMaxFacesPerFrame));
  r.Int("blend", &face->blend, 0, static_cast<int>(kMaxFaceSize) / 2);
  r.String("face_detector", &face->detector);
  r.String("face_table", &face->table);
}

Status CheckFaceSetting(JobMode mode, const FaceSetting& face, const std::string& path) {
  if (mode != JobMode::kFaces) return Status::Ok();
  if (face.detector.empty() && face.table.empty()) {
    return Status(StatusCode::kInvalidJob,
                  path +
                      ".face_detector: face mode needs face_detector (a BlazeFace ONNX file) "
                      "or face_table, and no detector is installed with framemill (" +
                      kInstalledFaceDetector +
                      " in <prefix>/share/framemill/face-detector: scripts/install.sh puts it "
                      "there)");
  }
  if (face.BlendPixels() * 2 > face.size) {
    return Status(StatusCode::kInvalidJob, path + ".blend: " + std::to_string(face.blend) +
                                               " pixels is more than half of face_size " +
                                               std::to_string(face.size));
  }
  for (const std::string* file : {&face.detector, &face.table}) {
    if (file->find('\0') != std::string::npos) {
      return Status(StatusCode::kInvalidJob,
                    path + (file == &face.detector ? ".face_detector" : ".face_table") +
                        ": contains a NUL byte");
    }
  }
  return Status::Ok();
}

}  // namespace framemill
