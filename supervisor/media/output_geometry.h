// The output's displayed geometry: what the encoder is told so that the output shows as the
// source does (the model's frames are upright, so the output is written upright, with no display
// matrix), and the check that it does.
//
// - Aspect: the output carries a sample aspect ratio that keeps the source's display aspect ratio
//   (see OutputSampleAspect).
// - Field order: progressive unless the frames kept their fields (deinterlace off), then the
//   source's order, coded as interlaced.
// - Odd sizes: H.264 and H.265 code 4:2:0 (and 4:2:2 across) in whole chroma samples, and their
//   cropping too (h264_metadata refuses crop_right=1 on 4:2:0: "must be a multiple of 2"), so an
//   odd size cannot be padded and cropped back there: libx264 and libx265 then encode the odd
//   size in 4:4:4 at the same depth, with a warning. Encoders that take odd sizes (libvpx-vp9,
//   libaom-av1, mpeg4, mpeg2video, prores_ks, ffv1; ffmpeg 5.1) keep the format.
// Pure functions except where noted: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// The pixel format to encode `width` x `height` frames with `codec` when `pix_fmt` was asked:
// `pix_fmt` itself when the size fits its chroma subsampling or the encoder takes odd sizes; the
// 4:4:4 format of the same depth for libx264 and libx265 (`*warning` says so); otherwise
// kInvalidJob naming encoders that can.
Result<std::string> PixelFormatForSize(const std::string& codec, const std::string& pix_fmt,
                                       int width, int height, std::string* warning);

// The output's geometry as the encoder writes it and verification expects it.
struct OutputGeometry {
  int display_width = 0;  // the output's frames (upright: no display matrix)
  int display_height = 0;
  Rational sample_aspect{1, 1};
  std::string field_order = "progressive";  // "progressive", "tt" or "bb"
};

// Filters for the encoder's -vf, after any colour conversion: setsar and setfield.
std::vector<std::string> GeometryEncoderFilters(const OutputGeometry& g);
// Encoder options: interlaced coding (-flags +ildct+ilme) when the fields are kept.
std::vector<std::string> GeometryEncoderOptions(const OutputGeometry& g);
// Options for the final stream-copy mux, so that containers with a field-order field (Matroska)
// say what the frames are.
std::vector<std::string> GeometryMuxOptions(const OutputGeometry& g);

// The displayed geometry of the output `got` (as ProbeMedia read it) against `expected` and the
// source `src`: displayed size, display aspect ratio (the source's within 0.2%), no display matrix
// left, and the field order (progressive frames flagged progressive; kept fields in the source's
// order). Errors: kVerifyFailed saying which.
Status CheckDisplayedGeometry(const VideoStreamInfo& src, const VideoStreamInfo& got,
                              const OutputGeometry& expected);

}  // namespace framemill
