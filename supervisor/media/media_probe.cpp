#include "supervisor/media/media_probe.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/checked_file.h"
#include "supervisor/media/reads_ahead.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/media/undecodable_packets.h"
#include "supervisor/media/pixel_format.h"
#include "supervisor/process/program_answers.h"
#include "supervisor/process/subprocess.h"

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

// depth: bit depth and chroma layout from the pixel format, HDR metadata from stream side data.
void ReadColor(const nlohmann::json& s, VideoStreamInfo* v) {
  PixelFormatTraits t = ParsePixelFormat(v->pix_fmt);
  v->bits_per_component = t.bits;
  v->chroma_layout = ChromaLayoutName(t.chroma);
  v->alpha = t.alpha;
  if (auto tags = s.find("tags"); tags != s.end() && tags->is_object()) {
    for (const auto& [key, value] : tags->items()) {
      if ((key == "alpha_mode" || key == "ALPHA_MODE") && value.is_string() &&
          value.get<std::string>() == "1") {
        v->alpha = true;
      }
    }
  }
  auto side = s.find("side_data_list");
  if (side != s.end()) ParseHdrSideData(*side, &v->hdr);
}

// HDR metadata that travels in the bitstream (HEVC SEI) shows only as frame side data: read the
// first frame's, for HDR transfers without stream side data.
Status ReadFrameHdr(const std::string& ffprobe, const SourceFile& source, VideoStreamInfo* v) {
  if (!IsHdrTransfer(v->color_transfer) || v->hdr.any()) return Status::Ok();
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(), {"-select_streams", std::to_string(v->index), "-read_intervals", "%+#1",
                           "-show_frames", "-print_format", "json", FdPath(source.fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Ok();  // the full probe read it: no metadata, then
  try {
    nlohmann::json j = nlohmann::json::parse(r->out);
    for (const nlohmann::json& f : j.value("frames", nlohmann::json::array())) {
      if (f.is_object() && f.contains("side_data_list"))
        ParseHdrSideData(f["side_data_list"], &v->hdr);
      break;
    }
  } catch (const std::exception&) {
    return Status::Ok();
  }
  return Status::Ok();
}

// One line of `ffprobe -show_entries packet=pts_time,flags -of csv=p=0`.
struct PacketLine {
  bool frame = true;     // false: flagged D (discarded, outside an edit list): not a decoded frame
  bool key = false;      // flagged K: a keyframe
  bool has_pts = false;  // "N/A": the container has no timestamps
  double t = 0.0;
};

PacketLine ParsePacketLine(const std::string& line) {
  PacketLine p;
  size_t comma = line.find(',');
  p.frame = comma == std::string::npos || line.find('D', comma) == std::string::npos;
  p.key = comma != std::string::npos && line.find('K', comma) != std::string::npos;
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

// "Format hls probed with size=2048 and score=100" in ffprobe's debug output.
std::string DetectedFormat(const std::string& ffprobe, const SourceFile& source) {
  std::vector<std::string> argv = {ffprobe, "-v", "debug"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.push_back(FdPath(source.fd));
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return "";
  const std::string key = "] Format ";
  size_t at = r->err.find(key);
  if (at == std::string::npos) return "";
  size_t start = at + key.size();
  size_t end = r->err.find(' ', start);
  return end == std::string::npos ? "" : r->err.substr(start, end - start);
}

// The video packets that give no picture (undecodable_packets.h), by presentation time as ffprobe
// prints them, and the first and last pictures' times where they move.
struct SkippedPackets {
  std::set<std::string> times;
  std::optional<double> first_shown, last_shown;
};

// The skipped packets at either end of a stream of `packets` (its first keyframe `first_key`, its
// last presentation time `last_time`; `timed`: its packets carry times, without which none can be
// told apart): the leading ones of a stream that does not open on a keyframe
// (undecodable_packets); the trailing ones of a file whose header announces more frames than it
// holds, under TruncatedInput::kAccept (their loss counted in lost_frames). Under kRefuse such a
// file is an error. Only these few packets are decoded, never the file.
Result<SkippedPackets> FindSkippedAtEnds(const std::string& ffprobe, const SourceFile& source,
                                         TruncatedInput truncation, bool timed, int64_t first_key,
                                         int64_t packets, double last_time, VideoStreamInfo* v) {
  SkippedPackets skipped;
  if (timed && first_key != 0) {
    Result<PacketDecode> d = FindLeadingUndecodable(ffprobe, source, v->index, first_key, packets);
    if (!d.ok()) return d.status();
    v->undecodable_packets = static_cast<int64_t>(d->undecodable.size());
    if (!d->undecodable.empty()) skipped.first_shown = d->first_shown;
    skipped.times = std::move(d->undecodable);
  }
  // A file cut short keeps its header: the index promises frames whose data is gone.
  if (v->header_frames <= 0 || packets >= v->header_frames) return skipped;
  if (truncation == TruncatedInput::kRefuse) {
    return Status(StatusCode::kInputInvalid, source.name + ": truncated: its header announces " +
                                                 std::to_string(v->header_frames) +
                                                 " video frames, only " + std::to_string(packets) +
                                                 " are present");
  }
  v->lost_frames = v->header_frames - packets;
  if (!timed) return skipped;
  // The packet cut through may give no picture: the last 64 frames' worth is decoded to know.
  const double fps = v->frame_rate.value();
  Result<PacketDecode> d =
      FindTrailingUndecodable(ffprobe, source, v->index, last_time - (fps > 0 ? 64.0 / fps : 0.0));
  if (!d.ok()) return d.status();
  if (!d->undecodable.empty() && d->any_shown) skipped.last_shown = d->last_shown;
  v->lost_frames += static_cast<int64_t>(d->undecodable.size());
  skipped.times.insert(d->undecodable.begin(), d->undecodable.end());
  return skipped;
}

// FindSkippedAtEnds, and with `every_picture` (a stream with packets in the middle that give no
// picture; timed ones only) the whole stream decoded to find those too (damaged_pictures).
Result<SkippedPackets> FindSkipped(const std::string& ffprobe, const SourceFile& source,
                                   TruncatedInput truncation, bool every_picture, bool timed,
                                   int64_t first_key, int64_t packets, double last_time,
                                   VideoStreamInfo* v) {
  Result<SkippedPackets> skipped =
      FindSkippedAtEnds(ffprobe, source, truncation, timed, first_key, packets, last_time, v);
  if (!skipped.ok() || !every_picture || !timed) return skipped;
  Result<PacketDecode> d = FindUndecodablePictures(ffprobe, source, v->index);
  if (!d.ok()) return d.status();
  for (const std::string& t : d->undecodable) {
    if (skipped->times.insert(t).second) ++v->damaged_pictures;
  }
  return skipped;
}

// Reads the presentation time of every packet of the video stream as ffprobe prints them,
// counting frames and checking the rate in fixed memory. Only a variable-rate video (whose frames
// keep their own times) has its times read again and kept: its memory is 8 bytes a frame.
// `scan`: the video stream's packet scan, started by the caller.
Status ReadFrameTimes(const std::string& ffprobe, const SourceFile& source,
                      TruncatedInput truncation, bool every_picture, PacketScan& scan,
                      MediaInfo* info) {
  const std::string& path = source.name;
  VideoStreamInfo& v = info->video;
  const double fps = v.frame_rate.value();
  bool missing_pts = false;
  int64_t packets = 0, frames = 0, first_key = -1;
  ConstantRateCheck check(fps);
  Result<CommandOutput> r = scan.Each([&](const std::string& line) {
    if (line.empty()) return;
    ++packets;
    PacketLine p = ParsePacketLine(line);
    if (p.key && first_key < 0) first_key = packets - 1;
    if (!p.frame) return;
    ++frames;
    if (p.has_pts)
      check.Add(p.t);
    else
      missing_pts = true;
  });
  if (!r.ok() || r->exit_code != 0) return PacketReadError(path, r);
  check.Finish();
  SkippedPackets skipped;
  {
    Result<SkippedPackets> found =
        FindSkipped(ffprobe, source, truncation, every_picture, !missing_pts && packets > 0,
                    first_key, packets, check.last(), &v);
    if (!found.ok()) return found.status();
    skipped = std::move(*found);
  }
  v.frame_count = frames - static_cast<int64_t>(skipped.times.size());
  if (missing_pts && fps > 0) {
    // No timestamps in the container (raw streams): frames are evenly spaced by definition.
    v.constant_rate = true;
    v.timestamps = false;
    v.last_time = v.start_time + static_cast<double>(std::max<int64_t>(frames - 1, 0)) / fps;
    return Status::Ok();
  }
  // (A damaged picture inside leaves a gap: its neighbours keep their times, read below.)
  if (check.constant() && !missing_pts && v.damaged_pictures == 0) {
    v.constant_rate = true;
    if (frames > 0) {
      v.start_time = skipped.first_shown.value_or(check.first());
      v.last_time = skipped.last_shown.value_or(check.last());
    }
    return Status::Ok();
  }
  // Variable rate (or a disorder the check could not follow): every time, sorted, kept.
  std::vector<double> times;
  times.reserve(static_cast<size_t>(frames));
  r = RunForEachLine(PacketCommand(ffprobe, source, v.index),
                     [&](const std::string& line) {
                       if (line.empty()) return;
                       PacketLine p = ParsePacketLine(line);
                       if (!p.frame) return;
                       if (!skipped.times.empty()) {
                         std::vector<std::string> f = CsvFields(line);
                         if (!f.empty() && skipped.times.count(f[0]) > 0) return;
                       }
                       times.push_back(p.has_pts ? p.t : 0.0);
                     },
                     {source.fd});
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

namespace {

// What Probe reads beyond the format, streams and chapters.
enum class FrameRead {
  kNone,
  kTimesAndFields,            // every packet's time; the first frames' field order
  kTimesAndFieldsUnlessWord,  // the same, but a stream's own "progressive" is taken
};

// Every packet's time and the first frames' field order, read by two ffprobe runs at once (each
// opens the file anew through /proc/self/fd, so neither moves the other's position); either
// taken from `ahead` where it read the video stream (reads_ahead.h).
Status ReadTimesAndFields(const std::string& ffprobe, const SourceFile& source, bool fields,
                          TruncatedInput truncation, bool every_picture, ReadsAhead& ahead,
                          MediaInfo* info) {
  const int index = info->video.index;
  if (ahead.scan && ahead.scan->stream() != index) ahead.scan.reset();  // cancelled
  if (!ahead.scan) {
    ahead.scan.emplace(index, PacketCommand(ffprobe, source, index), std::vector<int>{source.fd});
  }
  const bool fields_ahead = fields && ahead.fields.valid() && index == ReadsAhead::kStream;
  VideoStreamInfo field_info = info->video;
  Status field_status = Status::Ok();
  std::thread field_reader;
  if (fields && !fields_ahead) {
    field_reader = std::thread(
        [&] { field_status = ReadFrameFieldOrder(ffprobe, source, &field_info); });
  }
  Status times = ReadFrameTimes(ffprobe, source, truncation, every_picture, *ahead.scan, info);
  if (field_reader.joinable()) field_reader.join();
  if (fields_ahead) {
    field_status = ahead.fields.get();
    if (!ahead.field_order.empty()) field_info.field_order = ahead.field_order;
  }
  FM_RETURN_IF_ERROR(times);
  FM_RETURN_IF_ERROR(field_status);
  info->video.field_order = field_info.field_order;
  return Status::Ok();
}

Result<MediaInfo> Probe(const std::string& ffprobe, const SourceFile& source, FrameRead frames,
                        TruncatedInput truncation, bool every_picture) {
  const std::string& path = source.name;
  // The first stream's packets and field order, the video's in almost every file, are read
  // beside this probe (reads_ahead.h); a read of the wrong stream is cancelled and made again.
  ReadsAhead ahead(ffprobe, source, frames != FrameRead::kNone,
                   frames == FrameRead::kTimesAndFields);
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(),
              {"-print_format", "json", "-show_format", "-show_streams", "-show_chapters",
               FdPath(source.fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    if (r->err.find("not on whitelist") != std::string::npos) {
      std::string format = DetectedFormat(ffprobe, source);
      if (format.empty()) format = "one framemill does not read";
      return Status(StatusCode::kInputInvalid,
                    path + ": its format is " + format +
                        ", a playlist, list or device format that makes ffmpeg open other files "
                        "or devices; refused (the config key allow_playlist_inputs allows "
                        "playlist and list formats)");
    }
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
  info.probe_json = std::move(r->out);
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
      Status geometry = ReadGeometry(s, &v);
      if (!geometry.ok()) return Status(geometry.code(), path + ": " + geometry.message());
      ReadColor(s, &v);
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
  FM_RETURN_IF_ERROR(ReadFrameHdr(ffprobe, source, &info.video));
  if (frames != FrameRead::kNone) {
    const bool fields = frames == FrameRead::kTimesAndFields ||
                        info.video.field_order != "progressive";
    FM_RETURN_IF_ERROR(
        ReadTimesAndFields(ffprobe, source, fields, truncation, every_picture, ahead, &info));
    if (info.video.frame_count == 0) {
      return Status(StatusCode::kInputInvalid, path + ": video stream has no frames");
    }
  }
  return info;
}

}  // namespace

Result<MediaInfo> ProbeMedia(const std::string& ffprobe, const SourceFile& source, bool frame_times,
                             TruncatedInput truncation, bool every_picture) {
  return Probe(ffprobe, source, frame_times ? FrameRead::kTimesAndFields : FrameRead::kNone,
               truncation, every_picture);
}

Result<MediaInfo> ProbeOwnOutput(const std::string& ffprobe, const SourceFile& output,
                                 bool interlaced_expected) {
  return Probe(
      ffprobe, output,
      interlaced_expected ? FrameRead::kTimesAndFields : FrameRead::kTimesAndFieldsUnlessWord,
      TruncatedInput::kRefuse, /*every_picture=*/false);
}

}  // namespace framemill
