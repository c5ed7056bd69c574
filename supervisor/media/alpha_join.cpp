#include "supervisor/media/alpha_join.h"

#include <algorithm>

#include "common/checked_file.h"
#include "supervisor/media/pixel_format.h"

namespace framemill {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// VP8/VP9 alpha that the pixel format does not show (the stream tag alpha_mode 1): only libvpx's
// decoders read it.
bool SideAlpha(const VideoStreamInfo& v) { return !ParsePixelFormat(v.pix_fmt).alpha; }

std::string Describe(const VideoStreamInfo& v) {
  return SideAlpha(v) ? v.codec + " alpha, stream tag alpha_mode 1" : v.pix_fmt;
}

// The planar YUV format with alpha among `supported` in `layout`: the fewest bits at or above
// `bits`, else the most there are (ffv1 has yuva444p10le and yuva444p16le, no 12-bit); "".
std::string AlphaFormatIn(ChromaLayout layout, int bits,
                          const std::vector<std::string>& supported) {
  std::string best;
  int best_bits = 0;
  for (const std::string& f : supported) {
    const PixelFormatTraits t = ParsePixelFormat(f);
    if (!StartsWith(f, "yuva") || t.chroma != layout) continue;
    if (f.size() > 2 && f.compare(f.size() - 2, 2, "be") == 0) continue;
    const bool better = best.empty() || (best_bits < bits && t.bits > best_bits) ||
                        (t.bits >= bits && t.bits < best_bits);
    if (better) {
      best = f;
      best_bits = t.bits;
    }
  }
  return best;
}

// `pix_fmt` with an alpha plane: its own layout, else 4:4:4 (prores_ks has yuva444p10le
// alone); "".
std::string WithAlpha(const std::string& pix_fmt, const std::vector<std::string>& supported) {
  const PixelFormatTraits want = ParsePixelFormat(pix_fmt);
  const std::string same = AlphaFormatIn(want.chroma, want.bits, supported);
  return same.empty() ? AlphaFormatIn(ChromaLayout::k444, want.bits, supported) : same;
}

// Why `codec` writing `pix_fmt` cannot hold alpha; "" when it can (`*with_alpha` then says how).
std::string CannotHold(const std::string& codec, const std::string& pix_fmt,
                       const std::vector<std::string>& supported, std::string* with_alpha) {
  if (codec == "libvpx-vp9" || codec == "libvpx") {
    return codec +
           " keeps alpha beside the picture as Matroska block additions, which "
           "framemill's segment files (NUT) do not carry";
  }
  *with_alpha = WithAlpha(pix_fmt, supported);
  if (with_alpha->empty()) {
    return codec + " has no pixel format with alpha for " + pix_fmt;
  }
  return "";
}

}  // namespace

Result<AlphaDecision> DecideAlpha(AlphaMode mode, const VideoStreamInfo& video,
                                  const std::string& codec, const std::string& pix_fmt,
                                  const std::vector<std::string>& supported) {
  AlphaDecision d;
  if (!video.alpha) return d;
  const std::string what = "the source's alpha channel (" + Describe(video) + ")";
  std::string with_alpha;
  const std::string why = mode == AlphaMode::kDrop
                              ? std::string("the job's alpha is \"drop\"")
                              : CannotHold(codec, pix_fmt, supported, &with_alpha);
  if (why.empty()) {
    d.keep = true;
    d.pix_fmt = with_alpha;
    return d;
  }
  if (mode == AlphaMode::kKeep) {
    return Status(StatusCode::kInvalidJob,
                  "alpha \"keep\": " + what + " cannot be kept: " + why +
                      "; use an encoder that holds alpha (prores_ks, which writes 4444 with "
                      "alpha, or ffv1), or alpha \"drop\"");
  }
  d.warning =
      what + " is dropped (" + why + "): framemill carries colour only, the output is opaque";
  return d;
}

std::vector<std::string> JoinAlphaArguments(const std::vector<std::string>& encoder_args,
                                            const AlphaSource& alpha, const AlphaTarget& target,
                                            int64_t first_frame, int64_t frames) {
  const VideoStreamInfo& v = *alpha.video;
  const DecodeSeek seek = SeekFor(v, alpha.container_start_s, first_frame, frames);
  std::vector<std::string> input = alpha.source->restrictions;
  if (SideAlpha(v)) input.insert(input.end(), {"-c:v", v.codec == "vp8" ? "libvpx" : "libvpx-vp9"});
  const std::vector<std::string> seek_in = SeekInputArguments(seek);
  input.insert(input.end(), seek_in.begin(), seek_in.end());
  input.insert(input.end(), {"-autorotate", "0", "-i", FdPath(alpha.source->fd)});

  // Both inputs renumbered in one time base: frame i meets frame i.
  const std::string renumber = ",settb=" + std::to_string(target.frame_rate.den) + "/" +
                               std::to_string(target.frame_rate.num) + ",setpts=N";
  const std::string chain = "[1:" + std::to_string(v.index) + "]";
  std::string filters;
  for (const std::string& f : alpha.filters) filters += (filters.empty() ? "" : ",") + f;
  // The decoder's: frames before the segment's first dropped by timestamp, or by count.
  std::string skip = SeekFilter(seek);
  if (skip.empty() && first_frame > 0) skip = "trim=start_frame=" + std::to_string(first_frame);
  if (!skip.empty()) filters += (filters.empty() ? "" : ",") + skip;
  // Scaled by swscale's bicubic (the encoder's -sws_flags are for its colour conversion), in the
  // output's own format: mergeplanes takes one format on all its inputs (a gray alpha would be
  // converted to YUV, its range squeezed), and the alpha plane is converted as alpha, full range.
  filters += std::string(filters.empty() ? "" : ",") + "scale=" + std::to_string(target.width) +
             ":" + std::to_string(target.height) + ":flags=bicubic,format=" + target.pix_fmt +
             ",setsar=" + target.sample_aspect.ToString() + renumber;
  std::vector<std::string> out;
  for (size_t i = 0; i < encoder_args.size(); ++i) {
    const std::string& a = encoder_args[i];
    if (a == "-vf" && i + 1 < encoder_args.size()) {
      const std::string& picture = encoder_args[i + 1];
      const std::string graph =
          "[0:v]" + picture + (picture.empty() ? "" : ",") + "format=" + target.pix_fmt + renumber +
          "[picture];" + chain + filters +
          "[alpha];[picture][alpha]mergeplanes=0x00010213:" + target.pix_fmt + "[out]";
      out.insert(out.end(), {"-filter_complex", graph, "-map", "[out]"});
      ++i;
      continue;
    }
    out.push_back(a);
    if (a == "pipe:0" && i > 0 && encoder_args[i - 1] == "-i") {
      out.insert(out.end(), input.begin(), input.end());
    }
  }
  return out;
}

}  // namespace framemill
