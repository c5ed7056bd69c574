#include "supervisor/media_probe.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "supervisor/subprocess.h"

namespace framemill {
namespace {

double NumberField(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0.0;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      return std::stod(it->get<std::string>());
    } catch (...) {
      return 0.0;
    }
  }
  return 0.0;
}

std::string StringField(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  std::string s = it->get<std::string>();
  return s == "unknown" ? "" : s;
}

bool IsAttachedPicture(const nlohmann::json& stream) {
  auto d = stream.find("disposition");
  if (d == stream.end() || !d->is_object()) return false;
  auto a = d->find("attached_pic");
  return a != d->end() && a->is_number_integer() && a->get<int>() != 0;
}

// Reads the presentation time of every packet of the video stream. Packets flagged D (discarded,
// outside an edit list) are not frames of the decoded video.
Status ReadFrameTimes(const std::string& ffprobe, const std::string& path, MediaInfo* info) {
  VideoStreamInfo& v = info->video;
  Result<CommandOutput> r = RunAndCapture(
      {ffprobe, "-v", "error", "-select_streams", std::to_string(v.index), "-show_entries",
       "packet=pts_time,flags", "-of", "csv=p=0", path});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kInputInvalid,
                  path + ": ffprobe cannot read its packets: " + LastLines(r->err, 3));
  }
  std::istringstream lines(r->out);
  bool missing_pts = false;
  int64_t packets = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ++packets;
    size_t comma = line.find(',');
    std::string pts = line.substr(0, comma);
    std::string flags = comma == std::string::npos ? "" : line.substr(comma + 1);
    if (flags.find('D') != std::string::npos) continue;
    if (pts == "N/A" || pts.empty()) {
      missing_pts = true;
      v.frame_times.push_back(0.0);
      continue;
    }
    v.frame_times.push_back(std::stod(pts));
  }
  // A file cut short keeps its header: the index promises frames whose data is gone.
  if (v.header_frames > 0 && packets < v.header_frames) {
    return Status(StatusCode::kInputInvalid,
                  path + ": truncated: its header announces " + std::to_string(v.header_frames) +
                      " video frames, only " + std::to_string(packets) + " are present");
  }
  std::sort(v.frame_times.begin(), v.frame_times.end());
  v.frame_count = static_cast<int64_t>(v.frame_times.size());
  double fps = v.frame_rate.value();
  if (missing_pts && fps > 0) {
    // No timestamps in the container (raw streams): frames are evenly spaced by definition.
    for (size_t i = 0; i < v.frame_times.size(); ++i) v.frame_times[i] = v.start_time + i / fps;
  }
  if (!v.frame_times.empty()) v.start_time = v.frame_times.front();
  v.constant_rate = fps > 0;
  for (size_t i = 0; v.constant_rate && i < v.frame_times.size(); ++i) {
    double ideal = v.frame_times.front() + static_cast<double>(i) / fps;
    if (std::fabs(v.frame_times[i] - ideal) > 0.25 / fps) v.constant_rate = false;
  }
  return Status::Ok();
}

}  // namespace

Rational ParseRational(const std::string& text) {
  Rational r;
  size_t slash = text.find('/');
  try {
    if (slash == std::string::npos) {
      r.num = std::stoll(text);
      r.den = 1;
    } else {
      r.num = std::stoll(text.substr(0, slash));
      r.den = std::stoll(text.substr(slash + 1));
    }
  } catch (...) {
    return Rational{};
  }
  if (r.den <= 0 || r.num < 0) return Rational{};
  return r;
}

Result<MediaInfo> ProbeMedia(const std::string& ffprobe, const std::string& path,
                             bool frame_times) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(StatusCode::kInputMissing, path + ": input does not exist or is not readable");
  }
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kInputMissing, path + ": not a regular file");
  Result<CommandOutput> r = RunAndCapture({ffprobe, "-v", "error", "-print_format", "json",
                                           "-show_format", "-show_streams", path});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kInputInvalid,
                  path + ": not a readable video: " + LastLines(r->err, 3));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(r->out);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInputInvalid, path + ": ffprobe gave unreadable output");
  }
  MediaInfo info;
  const nlohmann::json& format = j.value("format", nlohmann::json::object());
  info.format_name = StringField(format, "format_name");
  info.start_time = NumberField(format, "start_time");
  info.duration = NumberField(format, "duration");
  for (const nlohmann::json& s : j.value("streams", nlohmann::json::array())) {
    std::string type = StringField(s, "codec_type");
    int index = s.value("index", -1);
    if (type == "video" && info.video.index < 0 && !IsAttachedPicture(s)) {
      VideoStreamInfo& v = info.video;
      v.index = index;
      v.codec = StringField(s, "codec_name");
      v.width = s.value("width", 0);
      v.height = s.value("height", 0);
      v.frame_rate = ParseRational(StringField(s, "r_frame_rate"));
      Rational avg = ParseRational(StringField(s, "avg_frame_rate"));
      if (v.frame_rate.num == 0) v.frame_rate = avg;
      v.start_time = NumberField(s, "start_time");
      v.header_frames = static_cast<int64_t>(NumberField(s, "nb_frames"));
      v.color_space = StringField(s, "color_space");
      v.color_range = StringField(s, "color_range");
      v.color_primaries = StringField(s, "color_primaries");
      v.color_transfer = StringField(s, "color_transfer");
    } else if (type == "audio" || type == "subtitle") {
      OtherStreamInfo o;
      o.index = index;
      o.type = type;
      o.codec = StringField(s, "codec_name");
      o.duration = NumberField(s, "duration");
      (type == "audio" ? info.audio : info.subtitles).push_back(o);
    }
  }
  if (info.video.index < 0) {
    return Status(StatusCode::kInputInvalid, path + ": has no video stream");
  }
  if (info.video.width <= 0 || info.video.height <= 0) {
    return Status(StatusCode::kInputInvalid, path + ": video stream has no frame size");
  }
  if (info.video.frame_rate.num == 0) {
    return Status(StatusCode::kInputInvalid, path + ": video stream has no frame rate");
  }
  if (frame_times) {
    FM_RETURN_IF_ERROR(ReadFrameTimes(ffprobe, path, &info));
    if (info.video.frame_count == 0) {
      return Status(StatusCode::kInputInvalid, path + ": video stream has no frames");
    }
  }
  return info;
}

}  // namespace framemill
