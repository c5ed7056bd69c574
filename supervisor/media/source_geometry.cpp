#include "supervisor/media/source_geometry.h"

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/checked_file.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// -1, 0 or 1 for an entry of a normalised matrix; 2 when it is neither (within 1%).
int UnitSign(double x) {
  if (std::fabs(x) < 0.01) return 0;
  if (std::fabs(x - 1.0) < 0.01) return 1;
  if (std::fabs(x + 1.0) < 0.01) return -1;
  return 2;
}

std::string StreamString(const nlohmann::json& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_string() ? it->get<std::string>() : "";
}

// ffprobe's "64:45"; "0:1", "N/A" or nothing are square.
Rational ParseSampleAspect(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return {1, 1};
  char* end = nullptr;
  long long num = std::strtoll(text.c_str(), &end, 10);
  long long den = std::strtoll(text.c_str() + colon + 1, &end, 10);
  if (num <= 0 || den <= 0) return {1, 1};
  long long g = std::gcd(num, den);
  return {num / g, den / g};
}

}  // namespace

Result<DisplayTransform> TransformFromMatrix(const std::array<int64_t, 9>& m) {
  const double a = m[0] / 65536.0, b = m[1] / 65536.0, c = m[3] / 65536.0, d = m[4] / 65536.0;
  const double scale = std::sqrt(std::fabs(a * d - b * c));
  if (scale < 1e-6) return Status(StatusCode::kInputInvalid, "its display matrix is degenerate");
  const int sa = UnitSign(a / scale), sb = UnitSign(b / scale), sc = UnitSign(c / scale),
            sd = UnitSign(d / scale);
  // A right-angle orientation has exactly one non-zero entry in each row and column.
  const bool straight = sb == 0 && sc == 0 && sa != 0 && sd != 0 && sa != 2 && sd != 2;
  const bool quarter = sa == 0 && sd == 0 && sb != 0 && sc != 0 && sb != 2 && sc != 2;
  if (!straight && !quarter) {
    double degrees = std::atan2(b, a) * 180.0 / M_PI;
    std::ostringstream why;
    why << "its display matrix turns the picture by " << std::lround(degrees)
        << " degrees or shears it; only multiples of 90 degrees and mirroring are supported";
    return Status(StatusCode::kInputInvalid, why.str());
  }
  DisplayTransform t;
  // A negative determinant mirrors. Taking the mirror out first (negating the first row, which
  // is what an hflip before the rotation contributes) leaves a pure rotation.
  int ra = sa, rb = sb;
  const int det = sa * sd - sb * sc;
  if (det < 0) {
    t.hflip = true;
    ra = -sa;
    rb = -sb;
  }
  // Rotation matrices in these coordinates: 0 (1 0 / 0 1), 90 clockwise (0 1 / -1 0),
  // 180 (-1 0 / 0 -1), 270 (0 -1 / 1 0): the first row tells them apart.
  if (ra == 1) {
    t.rotation = 0;
  } else if (rb == 1) {
    t.rotation = 90;
  } else if (ra == -1) {
    t.rotation = 180;
  } else {
    t.rotation = 270;
  }
  return t;
}

Result<DisplayTransform> TransformFromDisplayMatrixText(const std::string& text) {
  std::array<int64_t, 9> m{};
  std::istringstream in(text);
  int row = 0;
  for (std::string line; std::getline(in, line) && row < 3;) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream values(line.substr(colon + 1));
    for (int col = 0; col < 3; ++col) {
      if (!(values >> m[static_cast<size_t>(row * 3 + col)])) {
        return Status(StatusCode::kInputInvalid, "its display matrix cannot be read");
      }
    }
    ++row;
  }
  if (row != 3) return Status(StatusCode::kInputInvalid, "its display matrix cannot be read");
  return TransformFromMatrix(m);
}

Status ReadGeometry(const nlohmann::json& stream, VideoStreamInfo* v) {
  v->sample_aspect = ParseSampleAspect(StreamString(stream, "sample_aspect_ratio"));
  v->field_order = StreamString(stream, "field_order");
  if (v->field_order == "unknown") v->field_order = "";
  DisplayTransform t;
  auto list = stream.find("side_data_list");
  if (list != stream.end() && list->is_array()) {
    for (const nlohmann::json& side : *list) {
      if (!side.is_object()) continue;
      std::string matrix = StreamString(side, "displaymatrix");
      if (matrix.empty()) continue;
      Result<DisplayTransform> parsed = TransformFromDisplayMatrixText(matrix);
      if (!parsed.ok()) return parsed.status();
      t = *parsed;
    }
  }
  v->rotation = t.rotation;
  v->hflip = t.hflip;
  const bool quarter = t.rotation == 90 || t.rotation == 270;
  v->display_width = quarter ? v->height : v->width;
  v->display_height = quarter ? v->width : v->height;
  return Status::Ok();
}

Status ReadFrameFieldOrder(const std::string& ffprobe, const SourceFile& source, VideoStreamInfo* v,
                           const std::atomic<bool>* stop) {
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(), {"-select_streams", std::to_string(v->index), "-read_intervals", "%+#8",
                           "-show_entries", "frame=interlaced_frame,top_field_first", "-of",
                           "csv=p=0", FdPath(source.fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd}, stop);
  if (!r.ok()) return r.status();
  // Frames that cannot be decoded leave the stream's word; the decoder says what is wrong.
  if (r->exit_code != 0) return Status::Ok();
  std::istringstream in(r->out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("1,", 0) == 0) {
      v->field_order = line.size() > 2 && line[2] == '1' ? "tt" : "bb";
      return Status::Ok();
    }
  }
  return Status::Ok();  // no interlaced frame among the first: the stream's word stands
}

bool IsInterlaced(const std::string& field_order) {
  return field_order == "tt" || field_order == "bb" || field_order == "tb" || field_order == "bt";
}

bool TopFieldFirst(const std::string& field_order) {
  return !field_order.empty() && field_order[0] == 't';
}

std::vector<std::string> OrientationFilters(const DisplayTransform& t) {
  switch (t.rotation) {
    case 90:
      return {t.hflip ? "transpose=clock_flip" : "transpose=clock"};
    case 180:
      return t.hflip ? std::vector<std::string>{"vflip"}
                     : std::vector<std::string>{"hflip", "vflip"};
    case 270:
      return {t.hflip ? "transpose=cclock_flip" : "transpose=cclock"};
    default:
      return t.hflip ? std::vector<std::string>{"hflip"} : std::vector<std::string>{};
  }
}

std::string DeinterlaceFilter(Deinterlace mode, const std::string& field_order) {
  switch (mode) {
    case Deinterlace::kAuto:
      return IsInterlaced(field_order) ? "bwdif=mode=send_frame:parity=auto:deint=interlaced" : "";
    case Deinterlace::kOff:
      return "";
    case Deinterlace::kBwdif:
      return "bwdif=mode=send_frame:parity=auto:deint=all";
    case Deinterlace::kYadif:
      return "yadif=mode=send_frame:parity=auto:deint=all";
    case Deinterlace::kW3fdif:
      return "w3fdif=mode=frame:parity=auto:deint=all";
    case Deinterlace::kEstdif:
      return "estdif=mode=frame:parity=auto:deint=all";
    case Deinterlace::kKerndeint:
      return "kerndeint";
  }
  return "";
}

bool KeepsFields(const VideoStreamInfo& v, Deinterlace mode) {
  return mode == Deinterlace::kOff && IsInterlaced(v.field_order);
}

Result<std::vector<std::string>> GeometryFilters(const VideoStreamInfo& v, Deinterlace mode) {
  if (KeepsFields(v, mode) && (v.rotation == 90 || v.rotation == 270)) {
    return Status(StatusCode::kInvalidJob,
                  "deinterlace is off for an interlaced source (field order " + v.field_order +
                      ") that is displayed turned by " + std::to_string(v.rotation) +
                      " degrees: turning it would make its fields columns; use deinterlace "
                      "auto or a named filter");
  }
  std::vector<std::string> filters;
  std::string deinterlace = DeinterlaceFilter(mode, v.field_order);
  if (!deinterlace.empty()) filters.push_back(deinterlace);
  for (std::string& f : OrientationFilters({v.rotation, v.hflip})) filters.push_back(f);
  return filters;
}

Rational UprightSampleAspect(const VideoStreamInfo& v) {
  if (v.rotation == 90 || v.rotation == 270) return {v.sample_aspect.den, v.sample_aspect.num};
  return v.sample_aspect;
}

Rational OutputSampleAspect(const Rational& sar, int in_w, int in_h, int out_w, int out_h) {
  if (sar.num <= 0 || sar.den <= 0 || in_w <= 0 || in_h <= 0 || out_w <= 0 || out_h <= 0) {
    return {1, 1};
  }
  // Same display aspect: out_w * sar' / out_h == in_w * sar / in_h.
  int64_t num = sar.num * static_cast<int64_t>(in_w) * out_h;
  int64_t den = sar.den * static_cast<int64_t>(in_h) * out_w;
  int64_t g = std::gcd(num, den);
  return {num / g, den / g};
}

double DisplayAspect(int w, int h, const Rational& sar) {
  if (h <= 0 || sar.den <= 0) return 0.0;
  return static_cast<double>(w) * static_cast<double>(sar.num) /
         (static_cast<double>(h) * static_cast<double>(sar.den));
}

}  // namespace framemill
