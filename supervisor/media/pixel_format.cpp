#include "supervisor/media/pixel_format.h"

#include <cctype>
#include <map>
#include <sstream>

#include "common/mutex.h"
#include "supervisor/process/program_answers.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The number at `pos` (0 when there is none).
int NumberAt(const std::string& s, size_t pos) {
  int n = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    n = n * 10 + (s[pos++] - '0');
  }
  return n;
}

ChromaLayout LayoutOfDigits(const std::string& digits) {
  if (digits == "420") return ChromaLayout::k420;
  if (digits == "422") return ChromaLayout::k422;
  if (digits == "444") return ChromaLayout::k444;
  if (digits == "440") return ChromaLayout::k440;
  if (digits == "411") return ChromaLayout::k411;
  if (digits == "410") return ChromaLayout::k410;
  return ChromaLayout::kUnknown;
}

// Layouts to try for a source's, nearest first: those that keep all of its chroma, then less.
std::vector<ChromaLayout> LayoutPreference(ChromaLayout source) {
  using C = ChromaLayout;
  switch (source) {
    case C::k422:
    case C::k411:
      return {C::k422, C::k444, C::k420};
    case C::k444:
    case C::k440:
      return {C::k444, C::k422, C::k420};
    case C::kGray:
      return {C::kGray, C::k420, C::k422, C::k444};
    default:
      return {C::k420, C::k422, C::k444};
  }
}

}  // namespace

const char* ChromaLayoutName(ChromaLayout layout) {
  switch (layout) {
    case ChromaLayout::k420:
      return "420";
    case ChromaLayout::k422:
      return "422";
    case ChromaLayout::k444:
      return "444";
    case ChromaLayout::k440:
      return "440";
    case ChromaLayout::k411:
      return "411";
    case ChromaLayout::k410:
      return "410";
    case ChromaLayout::kGray:
      return "gray";
    case ChromaLayout::kUnknown:
      break;
  }
  return "";
}

PixelFormatTraits ParsePixelFormat(const std::string& name) {
  PixelFormatTraits t;
  t.alpha = StartsWith(name, "yuva") || StartsWith(name, "gbrap") || StartsWith(name, "ya") ||
            StartsWith(name, "rgba") || StartsWith(name, "bgra") || StartsWith(name, "argb") ||
            StartsWith(name, "abgr") || StartsWith(name, "ayuv");
  if (StartsWith(name, "ya") && !StartsWith(name, "yuv")) {  // ya8, ya16le: gray with alpha
    t.chroma = ChromaLayout::kGray;
    t.bits = name == "ya8" ? 8 : 16;
    return t;
  }
  if (StartsWith(name, "yuv") && name.size() >= 6) {
    size_t pos = 3;
    if (name[pos] == 'j') t.full_range = true;
    if (name[pos] == 'j' || name[pos] == 'a') ++pos;
    t.chroma = LayoutOfDigits(name.substr(pos, 3));
    if (t.chroma != ChromaLayout::kUnknown && pos + 3 < name.size() && name[pos + 3] == 'p') {
      int bits = NumberAt(name, pos + 4);
      if (bits > 0) t.bits = bits;
    }
  } else if (StartsWith(name, "gray")) {
    t.chroma = ChromaLayout::kGray;
    int bits = NumberAt(name, 4);
    if (bits > 0) t.bits = bits;
  } else if (StartsWith(name, "nv")) {  // nv12, nv21 (4:2:0), nv16, nv20le (4:2:2), nv24, nv42
    int n = NumberAt(name, 2);
    t.chroma = n == 12 || n == 21   ? ChromaLayout::k420
               : n == 16 || n == 20 ? ChromaLayout::k422
               : n == 24 || n == 42 ? ChromaLayout::k444
                                    : ChromaLayout::kUnknown;
    if (n == 20) t.bits = 10;
  } else if (name.size() >= 4 && name[0] == 'p' &&
             std::isdigit(static_cast<unsigned char>(name[1]))) {
    // p010le, p016le (4:2:0), p210le, p216le (4:2:2), p410le, p416le (4:4:4)
    int n = NumberAt(name, 1);
    t.chroma = n / 100 == 0   ? ChromaLayout::k420
               : n / 100 == 2 ? ChromaLayout::k422
                              : ChromaLayout::k444;
    t.bits = n % 100;
  } else if (name == "yuyv422" || name == "uyvy422" || name == "yvyu422") {
    t.chroma = ChromaLayout::k422;
  } else if (StartsWith(name, "y210") || StartsWith(name, "y212")) {
    t.chroma = ChromaLayout::k422;
    t.bits = NumberAt(name, 2);
  } else if (StartsWith(name, "gbr") || StartsWith(name, "rgb") || StartsWith(name, "bgr") ||
             StartsWith(name, "argb") || StartsWith(name, "abgr") || StartsWith(name, "0rgb") ||
             StartsWith(name, "0bgr") || StartsWith(name, "x2rgb") || StartsWith(name, "x2bgr")) {
    t.rgb = true;
    t.chroma = ChromaLayout::k444;
    if (StartsWith(name, "gbr")) {
      size_t p = name.find('p');
      int bits = p == std::string::npos ? 0 : NumberAt(name, p + 1);
      if (bits > 0) t.bits = bits;
    } else if (name.find("48") != std::string::npos || name.find("64") != std::string::npos) {
      t.bits = 16;
    } else if (StartsWith(name, "x2")) {
      t.bits = 10;
    }
  } else if (StartsWith(name, "xyz12")) {
    t.chroma = ChromaLayout::k444;
    t.bits = 12;
  }
  return t;
}

std::vector<std::string> ParseEncoderPixelFormats(const std::string& help_text) {
  std::vector<std::string> names;
  const std::string key = "Supported pixel formats:";
  size_t at = help_text.find(key);
  if (at == std::string::npos) return names;
  size_t end = help_text.find('\n', at);
  std::istringstream line(help_text.substr(
      at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size()));
  std::string name;
  while (line >> name) names.push_back(name);
  return names;
}

Result<std::vector<std::string>> EncoderPixelFormats(const std::string& ffmpeg,
                                                     const std::string& codec) {
  struct Formats {
    Mutex mu;
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_encoder
        GUARDED_BY(mu);
  };
  static Formats cache;
  MutexLock lock(&cache.mu);
  auto it = cache.by_encoder.find({ffmpeg, codec});
  if (it != cache.by_encoder.end()) return it->second;
  Result<CommandOutput> r =
      AskProgram({ffmpeg, "-hide_banner", "-nostdin", "-h", "encoder=" + codec});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->out.find("Encoder " + codec) == std::string::npos) {
    // (ffmpeg prints "Codec 'x' is not recognized" on stdout, and exits 0.)
    return Status(StatusCode::kInvalidJob, "encoder \"" + codec + "\" is not known to " + ffmpeg +
                                               ": " + LastLines(r->err.empty() ? r->out : r->err, 2));
  }
  std::vector<std::string> names = ParseEncoderPixelFormats(r->out);
  cache.by_encoder[{ffmpeg, codec}] = names;
  return names;
}

PixelFormatChoice ChoosePixelFormat(const PixelFormatTraits& source,
                                    const std::vector<std::string>& supported) {
  // The usable formats by layout: planar YUV and gray, bits -> name.
  std::map<ChromaLayout, std::map<int, std::string>> usable;
  for (const std::string& name : supported) {
    const bool planar = StartsWith(name, "yuv") && !StartsWith(name, "yuvj") &&
                        !StartsWith(name, "yuva") && name != "yuyv422";
    if (!planar && !StartsWith(name, "gray")) continue;
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "be") == 0) continue;
    if (name.find("f32") != std::string::npos) continue;
    PixelFormatTraits t = ParsePixelFormat(name);
    if (t.chroma == ChromaLayout::kUnknown) continue;
    usable[t.chroma].emplace(t.bits, name);
  }
  const std::string wanted =
      std::to_string(source.bits) + "-bit " +
      (source.chroma == ChromaLayout::kUnknown ? std::string("4:2:0")
                                               : std::string(ChromaLayoutName(source.chroma)));
  PixelFormatChoice c;
  for (ChromaLayout layout : LayoutPreference(source.chroma)) {
    auto it = usable.find(layout);
    if (it == usable.end()) continue;
    auto at_least = it->second.lower_bound(source.bits);
    const bool deep_enough = at_least != it->second.end();
    c.pix_fmt = deep_enough ? at_least->second : it->second.rbegin()->second;
    const bool same_layout = layout == source.chroma || source.chroma == ChromaLayout::kUnknown;
    if (!deep_enough || !same_layout) {
      c.warning = "the encoder has no pixel format for this " + wanted + " source; writing " +
                  c.pix_fmt + " instead";
    }
    return c;
  }
  c.pix_fmt = source.bits > 8 ? "yuv420p10le" : "yuv420p";
  c.warning = "the encoder lists no planar YUV pixel format; writing " + c.pix_fmt;
  return c;
}

}  // namespace framemill
