#include "supervisor/faces/face_table.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/file_util.h"
#include "common/json_fields.h"

namespace framemill {
namespace {

constexpr const char* kFormat = "framemill-face-table";

// The shortest decimal whose reading (as double, then float: as ReadFaceTable does) is `f`.
double ShortDecimal(float f) {
  char text[32];
  for (int digits = 6; digits < 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(f));
    const double d = std::strtod(text, nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return static_cast<double>(f);
}

}  // namespace

void FaceTable::CountFaces() {
  stats.frames_without_faces = 0;
  stats.faces_found = 0;
  stats.faces_per_frame.assign(1, 0);
  for (const std::vector<FaceWarp>& frame : frames) {
    if (stats.faces_per_frame.size() <= frame.size())
      stats.faces_per_frame.resize(frame.size() + 1);
    ++stats.faces_per_frame[frame.size()];
    stats.faces_found += static_cast<int64_t>(frame.size());
    stats.frames_without_faces += frame.empty();
  }
}

nlohmann::json ToJson(const FaceTableStats& s) {
  return {{"frames_without_faces", s.frames_without_faces},
          {"faces_found", s.faces_found},
          {"faces_filled", s.faces_filled},
          {"tracks", s.tracks},
          {"faces_per_frame", s.faces_per_frame},
          {"detection_s", s.detection_s},
          {"detection_ms_per_frame", s.detection_ms_per_frame},
          {"threads", s.threads}};
}

Status WriteFaceTable(const std::string& path, const FaceTable& table) {
  nlohmann::json frames = nlohmann::json::array();
  for (const std::vector<FaceWarp>& frame : table.frames) {
    nlohmann::json faces = nlohmann::json::array();
    for (const FaceWarp& w : frame) {
      nlohmann::json one = nlohmann::json::array({w.track});
      for (float m : w.to_crop) one.push_back(ShortDecimal(m));
      faces.push_back(std::move(one));
    }
    frames.push_back(std::move(faces));
  }
  const nlohmann::json doc = {{"format", kFormat},
                              {"version", kFaceTableVersion},
                              {"width", table.width},
                              {"height", table.height},
                              {"face_size", table.face_size},
                              {"face_margin", table.face_margin},
                              {"video_frames", table.video_frames},
                              {"first_frame", table.first_frame},
                              {"frame_count", table.frames.size()},
                              {"stats", ToJson(table.stats)},
                              {"frames", std::move(frames)}};
  Status s = AtomicWriteFile(path, doc.dump() + "\n", 0644);
  if (!s.ok()) return Status(StatusCode::kOutputInvalid, "face table " + path + ": " + s.message());
  return Status::Ok();
}

Result<FaceTable> ReadFaceTable(const std::string& path) {
  const std::string what = "face table " + path;
  if (!PathExists(path)) return Status(StatusCode::kInputMissing, what + ": no such file");
  Result<nlohmann::json> doc =
      ReadJsonFile(path, kMaxFaceTableBytes, StatusCode::kInputInvalid, LinkPolicy::kFollow);
  if (!doc.ok()) return doc.status().WithContext(what);
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInputInvalid, what + ": " + why);
  };
  const nlohmann::json& j = *doc;
  if (!j.is_object() || ValueOr<std::string>(j, "format", "") != kFormat) {
    return bad("not a framemill face table (no \"format\": \"framemill-face-table\")");
  }
  auto integer = [&](const char* key, int64_t lo, int64_t hi, int64_t* out) -> bool {
    const nlohmann::json* v = j.contains(key) ? &j.at(key) : nullptr;
    if (v == nullptr || !v->is_number_integer() || v->get<int64_t>() < lo ||
        v->get<int64_t>() > hi) {
      return false;
    }
    *out = v->get<int64_t>();
    return true;
  };
  int64_t version = 0, width = 0, height = 0, size = 0, video_frames = 0, first = 0, count = 0;
  if (!integer("version", 0, 1 << 30, &version)) return bad("no version");
  if (version != kFaceTableVersion) {
    return bad("version " + std::to_string(version) + ", this framemill reads version " +
               std::to_string(kFaceTableVersion));
  }
  if (!integer("width", 1, 1 << 16, &width) || !integer("height", 1, 1 << 16, &height)) {
    return bad("width and height must be whole numbers of pixels");
  }
  if (!integer("face_size", kMinFaceSize, kMaxFaceSize, &size)) return bad("bad face_size");
  if (!integer("video_frames", 0, int64_t{1} << 40, &video_frames)) return bad("bad video_frames");
  if (!integer("first_frame", 0, int64_t{1} << 40, &first)) return bad("bad first_frame");
  if (!integer("frame_count", 0, int64_t{1} << 40, &count)) return bad("bad frame_count");
  const nlohmann::json* frames = j.contains("frames") ? &j.at("frames") : nullptr;
  if (frames == nullptr || !frames->is_array() || static_cast<int64_t>(frames->size()) != count) {
    return bad("frames must be a list of frame_count (" + std::to_string(count) + ") lists");
  }
  FaceTable t;
  t.width = static_cast<int>(width);
  t.height = static_cast<int>(height);
  t.face_size = static_cast<int>(size);
  t.video_frames = video_frames;
  t.first_frame = first;
  if (j.contains("face_margin") && j.at("face_margin").is_number()) {
    t.face_margin = j.at("face_margin").get<double>();
  }
  t.frames.reserve(frames->size());
  for (size_t i = 0; i < frames->size(); ++i) {
    const nlohmann::json& frame = (*frames)[i];
    const std::string at = "frame " + std::to_string(first + static_cast<int64_t>(i));
    if (!frame.is_array() || frame.size() > kMaxFacesPerFrame) {
      return bad(at + ": must be a list of at most " + std::to_string(kMaxFacesPerFrame) +
                 " faces");
    }
    std::vector<FaceWarp> warps;
    for (const nlohmann::json& face : frame) {
      if (!face.is_array() || face.size() != 7 || !face[0].is_number_unsigned()) {
        return bad(at + ": a face must be [track, m0, m1, m2, m3, m4, m5]");
      }
      FaceWarp w{};
      w.present = 1;
      w.track = static_cast<uint32_t>(std::min<uint64_t>(face[0].get<uint64_t>(), UINT32_MAX));
      for (int k = 0; k < 6; ++k) {
        if (!face[k + 1].is_number() || !std::isfinite(face[k + 1].get<double>())) {
          return bad(at + ": a matrix value is not a finite number");
        }
        w.to_crop[k] = static_cast<float>(face[k + 1].get<double>());
      }
      const double det = double{w.to_crop[0]} * w.to_crop[4] - double{w.to_crop[1]} * w.to_crop[3];
      if (!std::isfinite(w.to_crop[0]) || std::fabs(det) < 1e-12) {
        return bad(at + ": a matrix that cannot be inverted");
      }
      warps.push_back(w);
    }
    t.frames.push_back(std::move(warps));
  }
  t.CountFaces();
  if (j.contains("stats") && j.at("stats").is_object()) {
    const nlohmann::json& s = j.at("stats");
    t.stats.tracks = ValueOr(s, "tracks", 0);
    t.stats.faces_filled = ValueOr(s, "faces_filled", int64_t{0});
    t.stats.detection_s = ValueOr(s, "detection_s", 0.0);
    t.stats.detection_ms_per_frame = ValueOr(s, "detection_ms_per_frame", 0.0);
    t.stats.threads = ValueOr(s, "threads", 0);
  }
  return t;
}

Status CheckFaceTable(const FaceTable& table, const FaceTableNeed& need, const std::string& what) {
  const std::string again = " (write it again with framemill faces --table)";
  auto differs = [&](const std::string& key, int64_t has, int64_t want) {
    return Status(StatusCode::kInvalidJob, what + ": its " + key + " is " + std::to_string(has) +
                                               ", the job's is " + std::to_string(want) + again);
  };
  if (table.width != need.width || table.height != need.height) {
    return Status(StatusCode::kInvalidJob,
                  what + ": made for frames of " + std::to_string(table.width) + "x" +
                      std::to_string(table.height) + ", the job's are " +
                      std::to_string(need.width) + "x" + std::to_string(need.height) + again);
  }
  if (table.face_size != need.face_size)
    return differs("face_size", table.face_size, need.face_size);
  if (table.video_frames != need.video_frames) {
    return differs("video's frame count", table.video_frames, need.video_frames);
  }
  const int64_t end = table.first_frame + static_cast<int64_t>(table.frames.size());
  if (need.first_frame < table.first_frame || need.first_frame + need.frames > end) {
    return Status(StatusCode::kInvalidJob,
                  what + ": holds frames " + std::to_string(table.first_frame) + ".." +
                      std::to_string(end - 1) + ", the job needs " +
                      std::to_string(need.first_frame) + ".." +
                      std::to_string(need.first_frame + need.frames - 1) + again);
  }
  return Status::Ok();
}

}  // namespace framemill
