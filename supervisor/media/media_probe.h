// What the supervisor needs to know about an input before planning: which stream is the video
// (found by type, never by index: in some files audio is stream 0), its size and rate, the
// presentation time of every frame, and which other streams to carry over. Uses ffprobe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/media/hdr_metadata.h"

namespace framemill {

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  double value() const { return den == 0 ? 0.0 : static_cast<double>(num) / den; }
  std::string ToString() const { return std::to_string(num) + "/" + std::to_string(den); }
};

struct VideoStreamInfo {
  int index = -1;  // absolute stream index in the file
  std::string codec;
  int width = 0;
  int height = 0;
  Rational frame_rate;        // nominal rate (r_frame_rate, else avg_frame_rate)
  double start_time = 0.0;    // seconds; first presentation time of the stream
  int64_t frame_count = 0;    // frames a sequential decode yields
  int64_t header_frames = 0;  // frames the container's header announces (0 = not given)
  double last_time = 0.0;     // seconds; presentation time of the last frame
  // Presentation time of each frame, seconds, ascending: kept for variable-rate video only (its
  // frames keep these times); empty at a constant rate, so that memory does not grow with the
  // video's length.
  std::vector<double> frame_times;
  bool constant_rate = true;  // every frame within a quarter frame of start + i / frame_rate
  bool timestamps = true;     // its packets carry presentation times (a raw stream's do not)
  // Leading packets that give no picture: a capture that begins mid-stream (between MPEG-2
  // sequence headers, an H.264 stream before its SPS/PPS, the open GOP's leading B-frames).
  // Found by decoding the stream's first packets, only when its first packet is no keyframe;
  // they are left out of frame_count, start_time and frame_times, as a player shows them.
  int64_t undecodable_packets = 0;
  // A file cut short whose header announces more frames than it holds, probed with
  // TruncatedInput::kAccept: the frames announced that it will not show (absent, or a last packet
  // cut through that gives no picture). 0 otherwise: a truncated file is refused by default.
  int64_t lost_frames = 0;
  // Packets inside the stream whose picture does not decode (a damaged picture: its start code
  // destroyed), found only when the probe was asked to decode every picture: left out as the
  // leading ones are, and the video then keeps every frame's time (frame_times: the gap stays).
  int64_t damaged_pictures = 0;
  std::string pix_fmt;        // ffprobe name ("yuv420p"), "" when unknown
  std::string color_space;    // ffprobe names ("bt709", "smpte170m"), "" when unknown
  std::string color_range;    // "tv" | "pc" | ""
  std::string color_primaries;
  std::string color_transfer;
  // Geometry (supervisor/media/source_geometry.h, ReadGeometry). As displayed: mirrored left-right when
  // `hflip`, then turned `rotation` degrees clockwise (0/90/180/270), from the display matrix.
  int rotation = 0;
  bool hflip = false;
  Rational sample_aspect{1, 1};  // as stored; {1, 1} when square or unknown
  std::string field_order;       // "progressive" | "tt" | "bb" | "tb" | "bt" | "" (unknown)
  int display_width = 0;         // the upright size the model gets: width x height, turned
  int display_height = 0;
  // depth: from pix_fmt (supervisor/media/pixel_format.h) and side data (supervisor/media/hdr_metadata.h).
  int bits_per_component = 8;
  std::string chroma_layout;  // "420" | "422" | "444" | "440" | "411" | "410" | "gray" | ""
  // An alpha channel: in the pixel format (yuva444p12le, gbrap...), or VP8/VP9's own in
  // Matroska (the stream tag alpha_mode 1, which ffprobe's pix_fmt does not show).
  bool alpha = false;
  HdrMetadata hdr;            // stream side data, else the first frame's (HDR transfers only)
};

struct OtherStreamInfo {
  int index = -1;
  std::string type;  // "audio" | "subtitle"
  std::string codec;
  double duration = 0.0;  // seconds, 0 when unknown
};

struct MediaInfo {
  std::string format_name;
  double start_time = 0.0;  // of the container: earliest start of any stream
  double duration = 0.0;    // of the container, seconds
  VideoStreamInfo video;
  std::vector<OtherStreamInfo> audio;
  std::vector<OtherStreamInfo> subtitles;
  // ffprobe's format, streams and chapters as it printed them (JSON): what ParseCarried reads
  // the tags, tracks and chapters from, with no second ffprobe.
  std::string probe_json;
};

// An open file that ffprobe and ffmpeg read as /proc/self/fd/<fd> (the descriptor is passed to
// them, the name never), under `restrictions` (supervisor/media/source_intake.h: a file is
// opened, checked and bound to its restrictions there).
struct SourceFile {
  int fd = -1;                            // not owned
  std::string name;                       // for messages only
  std::vector<std::string> restrictions;  // ffmpeg input options placed before its "-i"
};

// Probes the open file `source` (its format, streams and chapters in one ffprobe, kept in
// probe_json). With `frame_times`, reads every video packet's timestamp (no decoding; fast), and
// for a stream whose first packet is no keyframe decodes its first packets to learn which give
// no picture (undecodable_packets); a truncated file accepted has its last packets decoded
// likewise (undecodable_packets.h). With `every_picture` as well, decodes the whole video stream
// to find the damaged pictures inside it too (damaged_pictures; as long as a job's own decode).
// Errors: kInputInvalid (not a media file, a refused format named by its demuxer, no video
// stream, no frames, a truncated file under TruncatedInput::kRefuse) with ffprobe's own message.
Result<MediaInfo> ProbeMedia(const std::string& ffprobe, const SourceFile& source, bool frame_times,
                             TruncatedInput truncation = TruncatedInput::kRefuse,
                             bool every_picture = false);

// ProbeMedia with frame_times, for a file framemill encoded itself (the verify step): where it
// asked the encoder for progressive frames and the stream says "progressive", that word is taken
// and no frame is decoded (one ffprobe run fewer); an output meant to be interlaced has its first
// frames read as ProbeMedia reads them.
Result<MediaInfo> ProbeOwnOutput(const std::string& ffprobe, const SourceFile& output,
                                 bool interlaced_expected);

// Parses "30000/1001" (also "25"); den 0 or garbage gives {0, 1}.
Rational ParseRational(const std::string& text);

}  // namespace framemill
