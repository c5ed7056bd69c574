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
// (color_conversion device, worker/batch/frame_convert.h) repeats chroma the same way.
//
// Tags: ffprobe prints a tag by libavutil's name for it, but ffmpeg's -color_primaries,
// -color_trc and -colorspace options know some code points by other names (ffprobe's transfer
// "bt470m" is the option's "gamma22", "bt470bg" its "gamma28"): handed over by name such a tag
// failed the encoder. Tags go to ffmpeg as their ITU-T H.273 code points, which every name
// stands for and every option takes. What an encoder writes was found by trying each code point
// (ffmpeg 5.1): libx264 and libx265 write every primaries, transfer and matrix code point but
// EBU Tech 3213 primaries (22), which they drop; FitColorTags maps it to the nearest they write.
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

enum class ColorTagKind { kPrimaries, kTransfer, kMatrix };

// The H.273 code point of ffprobe's name for a tag ("bt470m" transfer: 4), or -1 for a name that
// is no tag ("", "unknown", "reserved", a name this table does not know).
int ColorTagCode(ColorTagKind kind, const std::string& name);

// Fits the path's primaries and transfer to what `codec` writes: a tag that is none (-1 above) is
// dropped, one the encoder cannot write becomes the nearest it writes. Returns one warning per
// change, naming the tag and what became of it; the path then holds what the output will carry.
std::vector<std::string> FitColorTags(const std::string& codec, ColorPath* path);

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
