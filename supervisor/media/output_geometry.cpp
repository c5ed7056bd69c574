#include "supervisor/media/output_geometry.h"

#include <cmath>

#include "supervisor/media/source_geometry.h"

namespace framemill {
namespace {

struct Subsampling {
  int x = 1, y = 1;
};

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Chroma subsampling of an FFmpeg pixel format, by its name.
Subsampling ChromaSubsampling(const std::string& f) {
  if (Contains(f, "420") || f == "nv12" || f == "nv21" || Contains(f, "p010") ||
      Contains(f, "p016"))
    return {2, 2};
  if (Contains(f, "422") || f == "nv16" || Contains(f, "yuyv") || Contains(f, "uyvy") ||
      Contains(f, "yvyu") || Contains(f, "p210") || Contains(f, "y210"))
    return {2, 1};
  if (Contains(f, "440")) return {1, 2};
  if (Contains(f, "411")) return {4, 1};
  if (Contains(f, "410")) return {4, 4};
  return {1, 1};
}

// The 4:4:4 format with the depth and range of a subsampled one ("" when unknown).
std::string FullChroma(const std::string& f) {
  if (f == "nv12" || f == "nv21" || f == "nv16") return "yuv444p";
  if (Contains(f, "p010")) return "yuv444p10le";
  if (Contains(f, "p016")) return "yuv444p16le";
  for (const char* layout : {"420", "422", "440", "411", "410"}) {
    size_t at = f.find(layout);
    if (at != std::string::npos && f.rfind("yuv", 0) == 0)
      return f.substr(0, at) + "444" + f.substr(at + 3);
  }
  return "";
}

bool TakesOddSizes(const std::string& codec) {
  return !(codec == "libx264" || codec == "libx265" || codec == "libsvtav1" ||
           codec.rfind("h264_", 0) == 0 || codec.rfind("hevc_", 0) == 0 ||
           codec.rfind("av1_", 0) == 0);
}

std::string Size(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

}  // namespace

Result<std::string> PixelFormatForSize(const std::string& codec, const std::string& pix_fmt,
                                       int width, int height, std::string* warning) {
  const Subsampling s = ChromaSubsampling(pix_fmt);
  if ((width % s.x == 0 && height % s.y == 0) || TakesOddSizes(codec)) return pix_fmt;
  std::string full = FullChroma(pix_fmt);
  if ((codec == "libx264" || codec == "libx265") && !full.empty()) {
    if (warning != nullptr) {
      *warning = Size(width, height) + " does not divide into the chroma samples of " + pix_fmt +
                 ", and " + codec + " can neither code nor crop a partial one: encoding " + full +
                 " instead (libvpx-vp9 or libaom-av1 keep " + pix_fmt + " at any size)";
    }
    return full;
  }
  return Status(StatusCode::kInvalidJob,
                "the output is " + Size(width, height) + ", which " + codec + " cannot encode in " +
                    pix_fmt +
                    " (its chroma is subsampled and the size is odd); use libx264 or libx265 "
                    "(4:4:4), libvpx-vp9 or libaom-av1");
}

std::vector<std::string> GeometryEncoderFilters(const OutputGeometry& g) {
  std::vector<std::string> f = {"setsar=" + std::to_string(g.sample_aspect.num) + "/" +
                                std::to_string(g.sample_aspect.den)};
  if (IsInterlaced(g.field_order)) {
    f.push_back(TopFieldFirst(g.field_order) ? "setfield=tff" : "setfield=bff");
  } else {
    f.push_back("setfield=prog");
  }
  return f;
}

std::vector<std::string> GeometryEncoderOptions(const OutputGeometry& g) {
  if (!IsInterlaced(g.field_order)) return {};
  return {"-flags", "+ildct+ilme"};
}

std::vector<std::string> GeometryMuxOptions(const OutputGeometry& g) {
  return {"-field_order:v:0", g.field_order};
}

Status CheckDisplayedGeometry(const VideoStreamInfo& src, const VideoStreamInfo& got,
                              const OutputGeometry& expected) {
  if (got.display_width != expected.display_width ||
      got.display_height != expected.display_height) {
    return Status(StatusCode::kVerifyFailed,
                  "output is displayed at " + Size(got.display_width, got.display_height) +
                      " (stored " + Size(got.width, got.height) + ", turned " +
                      std::to_string(got.rotation) + " degrees), expected " +
                      Size(expected.display_width, expected.display_height));
  }
  if (got.rotation != 0 || got.hflip) {
    return Status(StatusCode::kVerifyFailed,
                  "output carries a display matrix (" + std::to_string(got.rotation) + " degrees" +
                      (got.hflip ? ", mirrored" : "") + "); its frames are already upright");
  }
  const double want =
      DisplayAspect(src.display_width, src.display_height, UprightSampleAspect(src));
  const double have = DisplayAspect(got.display_width, got.display_height, got.sample_aspect);
  if (want <= 0 || std::fabs(have / want - 1.0) > 0.002) {
    return Status(StatusCode::kVerifyFailed,
                  "output display aspect ratio is " + std::to_string(have) + " (sample aspect " +
                      got.sample_aspect.ToString() + "), the source's " + std::to_string(want) +
                      " (sample aspect " + UprightSampleAspect(src).ToString() + " upright)");
  }
  if (IsInterlaced(expected.field_order)) {
    if (!IsInterlaced(got.field_order) ||
        TopFieldFirst(got.field_order) != TopFieldFirst(expected.field_order)) {
      return Status(StatusCode::kVerifyFailed,
                    "output field order is \"" + got.field_order + "\", expected the source's " +
                        (TopFieldFirst(expected.field_order) ? "top" : "bottom") +
                        " field first (does the encoder code interlaced video?)");
    }
  } else if (IsInterlaced(got.field_order)) {
    return Status(StatusCode::kVerifyFailed, "output is flagged interlaced (" + got.field_order +
                                                 ") but its frames are "
                                                 "progressive");
  }
  return Status::Ok();
}

}  // namespace framemill
