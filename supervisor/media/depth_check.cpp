#include "supervisor/media/depth_check.h"

#include <algorithm>

#include "supervisor/media/pixel_format.h"

namespace framemill {
namespace {

Status Differs(const std::string& what, const std::string& got, const std::string& want) {
  return Status(StatusCode::kVerifyFailed, "output " + what + " is " +
                                               (got.empty() ? "untagged" : "\"" + got + "\"") +
                                               ", expected \"" + want + "\"");
}

}  // namespace

Status CheckDepthAndColor(const DepthExpectation& want, const VideoStreamInfo& got) {
  if (want.pix_fmt.empty()) return Status::Ok();
  const PixelFormatTraits w = ParsePixelFormat(want.pix_fmt);
  // ffmpeg 5.1's ProRes decoder reads 4444 back as 12-bit, whatever depth prores_ks wrote.
  const bool prores_4444 = want.codec == "prores_ks" && w.chroma == ChromaLayout::k444;
  const int bits = prores_4444 ? std::max(w.bits, 12) : w.bits;
  if (got.bits_per_component != bits) {
    return Differs("bit depth (" + got.pix_fmt + ")", std::to_string(got.bits_per_component),
                   std::to_string(bits));
  }
  if (w.chroma != ChromaLayout::kUnknown && got.chroma_layout != ChromaLayoutName(w.chroma)) {
    return Differs("chroma layout (" + got.pix_fmt + ")", got.chroma_layout,
                   ChromaLayoutName(w.chroma));
  }
  if (w.alpha && !got.alpha) return Differs("alpha plane (" + got.pix_fmt + ")", "", "alpha");
  if (want.codec != "libx264" && want.codec != "libx265") return Status::Ok();
  const bool yuv = !w.rgb && w.chroma != ChromaLayout::kGray;
  if (yuv && got.color_space != want.color.color_space) {
    return Differs("colour space", got.color_space, want.color.color_space);
  }
  const std::string range = want.color.full_range ? "pc" : "tv";
  if (!w.rgb && got.color_range != range) return Differs("colour range", got.color_range, range);
  if (!want.color.primaries.empty() && got.color_primaries != want.color.primaries) {
    return Differs("colour primaries", got.color_primaries, want.color.primaries);
  }
  if (!want.color.transfer.empty() && got.color_transfer != want.color.transfer) {
    return Differs("transfer", got.color_transfer, want.color.transfer);
  }
  if (want.hdr.mastering.present && !(got.hdr.mastering == want.hdr.mastering)) {
    return Differs("mastering display",
                   got.hdr.mastering.present ? MasterDisplayParameter(got.hdr.mastering) : "",
                   MasterDisplayParameter(want.hdr.mastering));
  }
  if (want.hdr.light.present && !(got.hdr.light == want.hdr.light)) {
    auto text = [](const ContentLight& l) {
      return std::to_string(l.max_cll) + "," + std::to_string(l.max_fall);
    };
    return Differs("content light level", got.hdr.light.present ? text(got.hdr.light) : "",
                   text(want.hdr.light));
  }
  return Status::Ok();
}

}  // namespace framemill
