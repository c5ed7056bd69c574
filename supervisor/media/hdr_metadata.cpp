#include "supervisor/media/hdr_metadata.h"

#include <cstdlib>
#include <sstream>

#include "common/checked_file.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// "N/D" (or a bare number) from ffprobe scaled to units of 1/unit, rounded; false if malformed.
bool ScaledField(const nlohmann::json& entry, const char* key, int64_t unit, int64_t* out) {
  auto it = entry.find(key);
  if (it == entry.end()) return false;
  if (it->is_number()) {
    *out = static_cast<int64_t>(it->get<double>() * static_cast<double>(unit) + 0.5);
    return true;
  }
  if (!it->is_string()) return false;
  const std::string text = it->get<std::string>();
  char* end = nullptr;
  long long num = std::strtoll(text.c_str(), &end, 10);
  long long den = 1;
  if (end != nullptr && *end == '/') den = std::strtoll(end + 1, &end, 10);
  if (end == nullptr || *end != '\0' || den <= 0 || num < 0) return false;
  *out = (num * unit + den / 2) / den;
  return true;
}

// The value at the end of a trace_headers line ("... = 13250"); false when there is none.
bool TraceValue(const std::string& line, int64_t* out) {
  size_t eq = line.rfind(" = ");
  if (eq == std::string::npos) return false;
  char* end = nullptr;
  long long v = std::strtoll(line.c_str() + eq + 3, &end, 10);
  if (end == line.c_str() + eq + 3) return false;
  *out = v;
  return true;
}

}  // namespace

void ParseSeiTrace(const std::string& trace, HdrMetadata* m) {
  struct Field {
    const char* name;
    int64_t* value;
    bool* seen;
  };
  MasteringDisplay d;
  ContentLight l;
  bool seen[12] = {};
  const Field fields[] = {{"display_primaries_x[0] ", &d.green_x, &seen[0]},
                          {"display_primaries_y[0] ", &d.green_y, &seen[1]},
                          {"display_primaries_x[1] ", &d.blue_x, &seen[2]},
                          {"display_primaries_y[1] ", &d.blue_y, &seen[3]},
                          {"display_primaries_x[2] ", &d.red_x, &seen[4]},
                          {"display_primaries_y[2] ", &d.red_y, &seen[5]},
                          {"white_point_x ", &d.white_x, &seen[6]},
                          {"white_point_y ", &d.white_y, &seen[7]},
                          {"max_display_mastering_luminance ", &d.max_luminance, &seen[8]},
                          {"min_display_mastering_luminance ", &d.min_luminance, &seen[9]},
                          {"max_content_light_level ", &l.max_cll, &seen[10]},
                          {"max_pic_average_light_level ", &l.max_fall, &seen[11]}};
  std::istringstream lines(trace);
  std::string line;
  while (std::getline(lines, line)) {
    for (const Field& f : fields) {
      if (!*f.seen && line.find(f.name) != std::string::npos) *f.seen = TraceValue(line, f.value);
    }
  }
  d.present = true;
  for (int i = 0; i < 10; ++i) d.present = d.present && seen[i];
  l.present = seen[10] && seen[11];
  if (d.present) m->mastering = d;
  if (l.present) m->light = l;
}

Status ReadBitstreamHdr(const std::string& ffmpeg, int fd,
                        const std::vector<std::string>& input_options, HdrMetadata* m) {
  std::vector<std::string> argv = {ffmpeg, "-nostdin", "-hide_banner", "-v", "verbose"};
  argv.insert(argv.end(), input_options.begin(), input_options.end());
  argv.insert(argv.end(), {"-i", FdPath(fd), "-map", "0:v:0", "-c", "copy", "-bsf:v",
                           "trace_headers", "-frames:v", "1", "-f", "null", "-"});
  Result<CommandOutput> r = RunAndCapture(argv, {fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kIo, "reading the output's SEI failed: " + LastLines(r->err, 3));
  }
  ParseSeiTrace(r->err, m);
  return Status::Ok();
}

bool MasteringDisplay::operator==(const MasteringDisplay& o) const {
  return present == o.present && red_x == o.red_x && red_y == o.red_y && green_x == o.green_x &&
         green_y == o.green_y && blue_x == o.blue_x && blue_y == o.blue_y && white_x == o.white_x &&
         white_y == o.white_y && min_luminance == o.min_luminance &&
         max_luminance == o.max_luminance;
}

bool ContentLight::operator==(const ContentLight& o) const {
  return present == o.present && max_cll == o.max_cll && max_fall == o.max_fall;
}

void ParseHdrSideData(const nlohmann::json& side_data_list, HdrMetadata* m) {
  if (!side_data_list.is_array()) return;
  for (const nlohmann::json& e : side_data_list) {
    if (!e.is_object()) continue;
    const std::string type = e.value("side_data_type", std::string());
    if (type == "Mastering display metadata") {
      MasteringDisplay d;
      const int64_t c = 50000, l = 10000;
      d.present =
          ScaledField(e, "red_x", c, &d.red_x) && ScaledField(e, "red_y", c, &d.red_y) &&
          ScaledField(e, "green_x", c, &d.green_x) && ScaledField(e, "green_y", c, &d.green_y) &&
          ScaledField(e, "blue_x", c, &d.blue_x) && ScaledField(e, "blue_y", c, &d.blue_y) &&
          ScaledField(e, "white_point_x", c, &d.white_x) &&
          ScaledField(e, "white_point_y", c, &d.white_y) &&
          ScaledField(e, "min_luminance", l, &d.min_luminance) &&
          ScaledField(e, "max_luminance", l, &d.max_luminance);
      if (d.present) m->mastering = d;
    } else if (type == "Content light level metadata") {
      ContentLight cl;
      cl.present = ScaledField(e, "max_content", 1, &cl.max_cll) &&
                   ScaledField(e, "max_average", 1, &cl.max_fall);
      if (cl.present) m->light = cl;
    }
  }
}

bool IsHdrTransfer(const std::string& transfer) {
  return transfer == "smpte2084" || transfer == "arib-std-b67";
}

std::string MasterDisplayParameter(const MasteringDisplay& m) {
  auto pair = [](int64_t a, int64_t b) {
    return "(" + std::to_string(a) + "," + std::to_string(b) + ")";
  };
  return "G" + pair(m.green_x, m.green_y) + "B" + pair(m.blue_x, m.blue_y) + "R" +
         pair(m.red_x, m.red_y) + "WP" + pair(m.white_x, m.white_y) + "L" +
         pair(m.max_luminance, m.min_luminance);
}

std::vector<std::string> HdrEncoderArguments(const std::string& codec, const HdrMetadata& m) {
  if (!m.any()) return {};
  const bool x265 = codec == "libx265", x264 = codec == "libx264";
  if (!x265 && !x264) return {};
  std::string params;
  auto add = [&](const std::string& p) { params += (params.empty() ? "" : ":") + p; };
  if (m.mastering.present) {
    add((x265 ? "master-display=" : "mastering-display=") + MasterDisplayParameter(m.mastering));
  }
  if (m.light.present) {
    add((x265 ? "max-cll=" : "cll=") + std::to_string(m.light.max_cll) + "," +
        std::to_string(m.light.max_fall));
  }
  return {x265 ? "-x265-params" : "-x264-params", params};
}

}  // namespace framemill
