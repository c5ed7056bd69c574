// Pixel formats by their ffmpeg names: what a source's format holds (bits per component, chroma
// layout), which formats an encoder takes (from `ffmpeg -h encoder=NAME`), and the output format
// `pix_fmt: "auto"` picks: the source's bit depth and chroma layout where the encoder has them,
// else the nearest it has, with a warning. Pure functions except EncoderPixelFormats.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

enum class ChromaLayout { k420, k422, k444, k440, k411, k410, kGray, kUnknown };

// "420", "422", "444", "440", "411", "410", "gray", "" (unknown).
const char* ChromaLayoutName(ChromaLayout layout);

struct PixelFormatTraits {
  int bits = 8;  // per component; 8 when the name says nothing
  ChromaLayout chroma = ChromaLayout::kUnknown;
  bool rgb = false;         // RGB/GBR formats (chroma is then k444)
  bool full_range = false;  // a yuvj* format (full range by its name)
  bool alpha = false;       // it has an alpha plane (yuva*, gbrap*, rgba, ya16...)
};

// Traits of an ffmpeg pixel format name: yuv420p10le, yuvj422p, nv12, p010le, gray12le, gbrp10le,
// rgb48le, yuyv422... An unknown name gives 8 bits and kUnknown.
PixelFormatTraits ParsePixelFormat(const std::string& name);

// The names on the "Supported pixel formats:" line of `ffmpeg -h encoder=NAME`; empty when the
// encoder lists none.
std::vector<std::string> ParseEncoderPixelFormats(const std::string& help_text);

// Asks `ffmpeg -h encoder=codec` once per process and codec. Errors: kIo when ffmpeg cannot be
// run; kInvalidJob when ffmpeg does not know the encoder.
Result<std::vector<std::string>> EncoderPixelFormats(const std::string& ffmpeg,
                                                     const std::string& codec);

struct PixelFormatChoice {
  std::string pix_fmt;  // an ffmpeg name the encoder takes
  std::string warning;  // empty when the source's depth and layout are kept
};

// The output format for a source of `source` traits among `supported` (planar YUV and gray
// formats only: the range travels in tags, so yuvj* is never chosen). Same layout and the fewest
// bits at or above the source's; else the same layout with the most bits it has; else the nearest
// layout that keeps the source's chroma (4:2:2 -> 4:4:4 before 4:2:0), with a warning. With
// nothing usable listed: yuv420p (8-bit sources) or yuv420p10le, with a warning.
PixelFormatChoice ChoosePixelFormat(const PixelFormatTraits& source,
                                    const std::vector<std::string>& supported);

}  // namespace framemill
