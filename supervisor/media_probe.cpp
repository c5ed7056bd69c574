#include "supervisor/media_probe.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <queue>
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

// One line of `ffprobe -show_entries packet=pts_time,flags -of csv=p=0`.
struct PacketLine {
  bool frame = true;     // false: flagged D (discarded, outside an edit list): not a decoded frame
  bool has_pts = false;  // "N/A": the container has no timestamps
  double t = 0.0;
};

PacketLine ParsePacketLine(const std::string& line) {
  PacketLine p;
  size_t comma = line.find(',');
  p.frame = comma == std::string::npos || line.find('D', comma) == std::string::npos;
  char* end = nullptr;
  p.t = std::strtod(line.c_str(), &end);
  p.has_pts = end != line.c_str() && (*end == ',' || *end == '\0');
  return p;
}

// Checks, in one pass and a fixed amount of memory, that presentation times arriving in decode
// order are start + i / fps within a quarter frame. Decode order differs from presentation
// order by a few frames (B-frames); a small window puts them back in order. A disorder deeper
// than the window makes the answer "not known to be constant".
class ConstantRateCheck {
 public:
  explicit ConstantRateCheck(double fps) : fps_(fps), constant_(fps > 0) {}
  void Add(double t) {
    window_.push(t);
    if (window_.size() > kWindow) Emit();
  }
  void Finish() {
    while (!window_.empty()) Emit();
  }
  bool constant() const { return constant_; }
  int64_t count() const { return count_; }
  double first() const { return first_; }
  double last() const { return last_; }

 private:
  static constexpr size_t kWindow = 64;
  void Emit() {
    double t = window_.top();
    window_.pop();
    if (count_ == 0) first_ = t;
    if ((count_ > 0 && t < last_) ||
        std::fabs(t - (first_ + static_cast<double>(count_) / fps_)) > 0.25 / fps_) {
      constant_ = false;
    }
    last_ = t;
    ++count_;
  }
  double fps_;
  bool constant_;
  int64_t count_ = 0;
  double first_ = 0, last_ = 0;
  std::priority_queue<double, std::vector<double>, std::greater<double>> window_;
};

Status PacketReadError(const std::string& path, const Result<CommandOutput>& r) {
  if (!r.ok()) return r.status();
  return Status(StatusCode::kInputInvalid,
                path + ": ffprobe cannot read its packets: " + LastLines(r->err, 3));
}

std::vector<std::string> PacketCommand(const std::string& ffprobe, const std::string& path,
                                       int stream) {
  return {ffprobe,
          "-v",
          "error",
          "-select_streams",
          std::to_string(stream),
          "-show_entries",
          "packet=pts_time,flags",
          "-of",
          "csv=p=0",
          path};
}

// Reads the presentation time of every packet of the video stream as ffprobe prints them,
// counting frames and checking the rate in fixed memory. Only a variable-rate video (whose frames
// keep their own times) has its times read again and kept: its memory is 8 bytes a frame.
Status ReadFrameTimes(const std::string& ffprobe, const std::string& path, MediaInfo* info) {
  VideoStreamInfo& v = info->video;
  const double fps = v.frame_rate.value();
  bool missing_pts = false;
  int64_t packets = 0, frames = 0;
  ConstantRateCheck check(fps);
  Result<CommandOutput> r =
      RunForEachLine(PacketCommand(ffprobe, path, v.index), [&](const std::string& line) {
        if (line.empty()) return;
        ++packets;
        PacketLine p = ParsePacketLine(line);
        if (!p.frame) return;
        ++frames;
        if (p.has_pts)
          check.Add(p.t);
        else
          missing_pts = true;
      });
  if (!r.ok() || r->exit_code != 0) return PacketReadError(path, r);
  // A file cut short keeps its header: the index promises frames whose data is gone.
  if (v.header_frames > 0 && packets < v.header_frames) {
    return Status(StatusCode::kInputInvalid,
                  path + ": truncated: its header announces " + std::to_string(v.header_frames) +
                      " video frames, only " + std::to_string(packets) + " are present");
  }
  check.Finish();
  v.frame_count = frames;
  if (missing_pts && fps > 0) {
    // No timestamps in the container (raw streams): frames are evenly spaced by definition.
    v.constant_rate = true;
    v.last_time = v.start_time + static_cast<double>(std::max<int64_t>(frames - 1, 0)) / fps;
    return Status::Ok();
  }
  if (check.constant() && !missing_pts) {
    v.constant_rate = true;
    if (frames > 0) {
      v.start_time = check.first();
      v.last_time = check.last();
    }
    return Status::Ok();
  }
  // Variable rate (or a disorder the check could not follow): every time, sorted, kept.
  std::vector<double> times;
  times.reserve(static_cast<size_t>(frames));
  r = RunForEachLine(PacketCommand(ffprobe, path, v.index), [&](const std::string& line) {
    if (line.empty()) return;
    PacketLine p = ParsePacketLine(line);
    if (p.frame) times.push_back(p.has_pts ? p.t : 0.0);
  });
  if (!r.ok() || r->exit_code != 0) return PacketReadError(path, r);
  std::sort(times.begin(), times.end());
  v.frame_count = static_cast<int64_t>(times.size());
  if (!times.empty()) {
    v.start_time = times.front();
    v.last_time = times.back();
  }
  v.constant_rate = fps > 0;
  for (size_t i = 0; v.constant_rate && i < times.size(); ++i) {
    double ideal = times.front() + static_cast<double>(i) / fps;
    if (std::fabs(times[i] - ideal) > 0.25 / fps) v.constant_rate = false;
  }
  if (!v.constant_rate) v.frame_times = std::move(times);
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
  Result<CommandOutput> r = RunAndCapture(
      {ffprobe, "-v", "error", "-print_format", "json", "-show_format", "-show_streams", path});
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
      v.pix_fmt = StringField(s, "pix_fmt");
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
