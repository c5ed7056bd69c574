// HDR10 static metadata a source may carry (SMPTE ST 2086 mastering display colour volume and
// CTA-861.3 content light levels), read from ffprobe's stream or frame side data, and the encoder
// arguments that write it into the output's bitstream:
//   libx265: -x265-params master-display=G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min):max-cll=C,F
//            (chromaticities in units of 0.00002, luminance in 0.0001 cd/m2)
//   libx264: -x264-params mastering-display=...:cll=C,F (same units; Debian 12's x264 writes SEI
//            137 and 144, but ffmpeg 5.1's H.264 decoder does not export them, so ffprobe cannot
//            show them: ReadBitstreamHdr reads them back with the trace_headers filter)
// Other encoders get the colour tags only. Pure functions, except ReadBitstreamHdr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

struct MasteringDisplay {
  bool present = false;
  // CIE 1931 xy chromaticities in units of 0.00002 (ffprobe gives "N/50000").
  int64_t red_x = 0, red_y = 0, green_x = 0, green_y = 0, blue_x = 0, blue_y = 0;
  int64_t white_x = 0, white_y = 0;
  // Luminance in units of 0.0001 cd/m2 (ffprobe gives "N/10000").
  int64_t min_luminance = 0, max_luminance = 0;
  bool operator==(const MasteringDisplay& o) const;
};

struct ContentLight {
  bool present = false;
  int64_t max_cll = 0;   // cd/m2, brightest pixel
  int64_t max_fall = 0;  // cd/m2, brightest frame average
  bool operator==(const ContentLight& o) const;
};

struct HdrMetadata {
  MasteringDisplay mastering;
  ContentLight light;
  bool any() const { return mastering.present || light.present; }
};

// Reads the "Mastering display metadata" and "Content light level metadata" entries of an
// ffprobe side_data_list (of a stream or of a frame) into *m; other entries are ignored, a
// malformed one is left out (present stays false).
void ParseHdrSideData(const nlohmann::json& side_data_list, HdrMetadata* m);

// Transfer characteristics (ffprobe names) of HDR video: "smpte2084" (PQ, HDR10) and
// "arib-std-b67" (HLG).
bool IsHdrTransfer(const std::string& transfer);

// The encoder arguments that carry `m` for `codec` (see above); empty when m has nothing or the
// encoder has no way to write it.
std::vector<std::string> HdrEncoderArguments(const std::string& codec, const HdrMetadata& m);

// Reads the mastering display and content light level SEI fields from ffmpeg's trace_headers
// log (display_primaries_x[0..2] in G, B, R order, white_point_x, max_content_light_level...).
void ParseSeiTrace(const std::string& trace, HdrMetadata* m);

// The SEI metadata of the first video frame of the open file `fd` (read as /proc/self/fd/N with
// `input_options` before its -i), by `ffmpeg -bsf:v trace_headers`. Errors: kIo when ffmpeg cannot
// be run or fails.
Status ReadBitstreamHdr(const std::string& ffmpeg, int fd,
                        const std::vector<std::string>& input_options, HdrMetadata* m);

// "G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)", the x265/x264 syntax.
std::string MasterDisplayParameter(const MasteringDisplay& m);

}  // namespace framemill
