// The one colour path every job takes between the source's YUV and the model's RGB, and back.
//
// Matrix: the source's tagged colour space; for an untagged source the one a player assumes: BT.709
// for HD (wider than 1279 or taller than 576 pixels: 720p and up), BT.601 (smpte170m) for SD,
// the rule mpv and most players apply. The same matrix converts the decoder's YUV to RGB and the
// model's RGB back to YUV, and is written into the output as its colour-space tag, with the range
// (limited unless the source is full range); primaries and transfer are copied as tagged.
//
// Chroma: the decoder repeats each chroma sample over the luma pixels it covers (swscale's
// `neighbor` with accurate rounding), the encoder averages them back (`area`): a model that keeps
// the picture gives the stored chroma back. Interpolating on the way in (bicubic, as before)
// blurred chroma twice and lost 5-7 dB of chroma PSNR against ffmpeg's own round trip
// (docs/ARCHITECTURE.md, "Colour path", has the figures). The workers' own conversion
// (color_conversion device, worker/frame_convert.h) repeats chroma the same way.
//
// Pure functions: what they return goes into ffmpeg's argument lists.
#pragma once

#include <string>
#include <vector>

#include "common/frame_format.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

struct ColorPath {
  std::string color_space;  // ffprobe name of the matrix both ways ("bt709", "smpte170m", ...)
  bool assumed = false;     // the source was untagged: color_space is the player's guess
  bool full_range = false;  // source is full range ("pc" or a yuvj* format)
  std::string primaries;    // as tagged; "" when untagged
  std::string transfer;     // as tagged; "" when untagged
};

// "bt709" when width > 1279 or height > 576, else "smpte170m" (BT.601).
std::string AssumedColorSpace(int width, int height);

// The colour path for a source (its tags, size and pixel format).
ColorPath ResolveColorPath(const VideoStreamInfo& v);

// swscale's name for the matrix of an ffprobe colour-space name ("" when swscale has none).
std::string SwsMatrixName(const std::string& color_space);

// swscale flags of the decoder's YUV -> RGB (accurate rounding or not) and of the encoder's
// RGB -> YUV; see the chroma paragraph above.
std::string DecoderSwsFlags(bool accurate);
std::string EncoderSwsFlags(bool accurate);

// The decoder's filters that turn the source's frames into `format` (to go last in its -vf):
// for rgb24/rgb48 an explicit scale with the path's matrix and range and the decoder's flags,
// then the format; for yuv420p none (the planes go to the workers as they are).
std::vector<std::string> ColorFilters(const ColorPath& path, FrameFormat format, bool accurate);

// The encoder's arguments that turn RGB into `out_pix_fmt` with the path's matrix and range and
// tag the output (-vf scale=..., -colorspace, -color_primaries, -color_trc, -color_range). For a
// non-YUV output format (gbrp, rgb24...) only the primaries and transfer tags.
struct EncoderColor {
  std::string filter;              // one -vf element; "" when none
  std::vector<std::string> flags;  // -sws_flags ...
  std::vector<std::string> tags;   // -colorspace ... -color_range ...
};
EncoderColor EncoderColorArguments(const ColorPath& path, const std::string& out_pix_fmt,
                                   bool accurate);

}  // namespace framemill
