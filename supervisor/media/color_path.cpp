#include "supervisor/media/color_path.h"

#include "supervisor/media/pixel_format.h"

namespace framemill {
namespace {

struct TagName {
  const char* name;  // ffprobe's (libavutil's av_color_*_name)
  int code;          // ITU-T H.273
};

constexpr TagName kPrimaries[] = {{"bt709", 1},     {"bt470m", 4},   {"bt470bg", 5},
                                  {"smpte170m", 6}, {"smpte240m", 7}, {"film", 8},
                                  {"bt2020", 9},    {"smpte428", 10}, {"smpte431", 11},
                                  {"smpte432", 12}, {"ebu3213", 22},  {"jedec-p22", 22}};
constexpr TagName kTransfers[] = {
    {"bt709", 1},         {"bt470m", 4},        {"bt470bg", 5},       {"smpte170m", 6},
    {"smpte240m", 7},     {"linear", 8},        {"log100", 9},        {"log316", 10},
    {"iec61966-2-4", 11}, {"bt1361e", 12},      {"iec61966-2-1", 13}, {"bt2020-10", 14},
    {"bt2020-12", 15},    {"smpte2084", 16},    {"smpte428", 17},     {"arib-std-b67", 18}};
constexpr TagName kMatrices[] = {
    {"gbr", 0},        {"bt709", 1},      {"fcc", 4},       {"bt470bg", 5},
    {"smpte170m", 6},  {"smpte240m", 7},  {"ycgco", 8},     {"bt2020nc", 9},
    {"bt2020c", 10},   {"smpte2085", 11}, {"chroma-derived-nc", 12},
    {"chroma-derived-c", 13},             {"ictcp", 14}};

// The code point as ffmpeg's option takes it ("" for none).
std::string CodeArgument(ColorTagKind kind, const std::string& name) {
  const int code = ColorTagCode(kind, name);
  return code < 0 ? "" : std::to_string(code);
}

}  // namespace

int ColorTagCode(ColorTagKind kind, const std::string& name) {
  auto find = [&](const auto& table) {
    for (const TagName& t : table) {
      if (name == t.name) return t.code;
    }
    return -1;
  };
  switch (kind) {
    case ColorTagKind::kPrimaries:
      return find(kPrimaries);
    case ColorTagKind::kTransfer:
      return find(kTransfers);
    case ColorTagKind::kMatrix:
      return find(kMatrices);
  }
  return -1;
}

std::vector<std::string> FitColorTags(const std::string& codec, ColorPath* path) {
  std::vector<std::string> warnings;
  auto drop_unknown = [&](ColorTagKind kind, const char* what, std::string* tag) {
    if (tag->empty() || ColorTagCode(kind, *tag) >= 0) return;
    warnings.push_back(std::string(what) + " \"" + *tag +
                       "\" is no tag an encoder can write; the output leaves it untagged");
    tag->clear();
  };
  drop_unknown(ColorTagKind::kPrimaries, "colour primaries", &path->primaries);
  drop_unknown(ColorTagKind::kTransfer, "transfer", &path->transfer);
  // EBU Tech 3213 primaries differ from BT.470 B/G's by at most 0.017 in x or y (H.273 table 2).
  const bool h26x = codec == "libx264" || codec == "libx265";
  if (h26x && ColorTagCode(ColorTagKind::kPrimaries, path->primaries) == 22) {
    warnings.push_back("colour primaries " + path->primaries +
                       " cannot be written; tagged bt470bg, the nearest it writes");
    path->primaries = "bt470bg";
  }
  return warnings;
}

std::string AssumedColorSpace(int width, int height) {
  return width > 1279 || height > 576 ? "bt709" : "smpte170m";
}

ColorPath ResolveColorPath(const VideoStreamInfo& v) {
  ColorPath p;
  p.color_space = v.color_space;
  if (SwsMatrixName(p.color_space).empty()) {
    // Untagged, or a space swscale has no matrix for ("reserved", "ycgco"): what a player assumes.
    p.color_space = AssumedColorSpace(v.width, v.height);
    p.assumed = true;
  }
  p.full_range = v.color_range == "pc" || ParsePixelFormat(v.pix_fmt).full_range;
  p.primaries = v.color_primaries;
  p.transfer = v.color_transfer;
  return p;
}

std::string SwsMatrixName(const std::string& color_space) {
  if (color_space == "bt709") return "bt709";
  if (color_space == "smpte170m") return "smpte170m";
  if (color_space == "bt470bg") return "bt470";
  if (color_space == "smpte240m") return "smpte240m";
  if (color_space == "fcc") return "fcc";
  if (color_space == "bt2020nc" || color_space == "bt2020c") return "bt2020";
  return "";
}

std::string DecoderSwsFlags(bool accurate) {
  // Without accurate rounding swscale takes its fast YUV -> RGB path, which repeats chroma too.
  return accurate ? "neighbor+accurate_rnd+full_chroma_int" : "bicubic+full_chroma_int";
}

std::string EncoderSwsFlags(bool accurate) { return accurate ? "area+accurate_rnd" : "area"; }

std::vector<std::string> ColorFilters(const ColorPath& path, FrameFormat format, bool accurate) {
  if (format == FrameFormat::kYuv420p) return {};
  return {"scale=in_color_matrix=" + SwsMatrixName(path.color_space) + ":in_range=" +
              (path.full_range ? "pc" : "tv") + ":flags=" + DecoderSwsFlags(accurate),
          std::string("format=") + FrameFormatName(format)};
}

EncoderColor EncoderColorArguments(const ColorPath& path, const std::string& out_pix_fmt,
                                   bool accurate) {
  EncoderColor c;
  c.flags = {"-sws_flags", EncoderSwsFlags(accurate)};
  const PixelFormatTraits out = ParsePixelFormat(out_pix_fmt);
  const bool yuv = !out.rgb && out.chroma != ChromaLayout::kGray;
  const std::string range = path.full_range ? "pc" : "tv";
  const std::string matrix = SwsMatrixName(path.color_space);
  if (yuv && !matrix.empty()) {
    c.filter = "scale=out_color_matrix=" + matrix + ":out_range=" + range +
               ":flags=" + EncoderSwsFlags(accurate);
    c.tags = {"-colorspace", CodeArgument(ColorTagKind::kMatrix, path.color_space)};
  }
  const std::string primaries = CodeArgument(ColorTagKind::kPrimaries, path.primaries);
  const std::string transfer = CodeArgument(ColorTagKind::kTransfer, path.transfer);
  if (!primaries.empty()) c.tags.insert(c.tags.end(), {"-color_primaries", primaries});
  if (!transfer.empty()) c.tags.insert(c.tags.end(), {"-color_trc", transfer});
  if (!out.rgb) {
    if (out.chroma == ChromaLayout::kGray) c.filter = "scale=out_range=" + range;
    c.tags.insert(c.tags.end(), {"-color_range", range});
  }
  return c;
}

}  // namespace framemill
