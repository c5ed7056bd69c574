#include "supervisor/media/color_path.h"

#include "supervisor/media/pixel_format.h"

namespace framemill {

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
    c.tags = {"-colorspace", path.color_space};
  }
  if (!path.primaries.empty()) c.tags.insert(c.tags.end(), {"-color_primaries", path.primaries});
  if (!path.transfer.empty()) c.tags.insert(c.tags.end(), {"-color_trc", path.transfer});
  if (!out.rgb) {
    if (out.chroma == ChromaLayout::kGray) c.filter = "scale=out_range=" + range;
    c.tags.insert(c.tags.end(), {"-color_range", range});
  }
  return c;
}

}  // namespace framemill
