// What a source carries beside its picture that players use, and how the final mux keeps it:
// the global title, chapters, every audio and subtitle track with its language, title and
// disposition (default, forced), Matroska attachments (fonts for subtitles), cover art and the
// timecode. The video stream itself comes from framemill's segments, so its own language, title,
// disposition and timecode are given back from the source's video stream.
//
// Three steps, all pure except the probe: ProbeCarried reads a file; PlanCarried decides, for an
// output container, which source streams go into the output and how (and which cannot, with a
// warning); CarriedArguments turns the plan into ffmpeg options; CheckCarriedMetadata compares
// the finished output against the source under the same plan, so that a lost chapter, track or
// tag fails the job with a reason instead of passing.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// One stream as ffprobe shows it, reduced to what is carried.
struct CarriedStream {
  int index = -1;        // absolute stream index in its file
  std::string type;      // ffprobe codec_type: "video", "audio", "subtitle", "attachment", "data"
  std::string codec;     // ffprobe codec_name ("" when none, e.g. tmcd data)
  std::string language;  // "" when absent or "und"
  std::string title;
  std::string filename;  // attachments (and Matroska cover art): the attached file's name
  std::string mimetype;
  std::string timecode;  // "hh:mm:ss:ff" (or ';' for drop-frame), "" when none
  bool is_default = false;
  bool forced = false;
  bool attached_pic = false;  // cover art: a still picture, not a video track
  // Tags that describe the encoded bitstream (encoder, bit rate, byte and frame counts, Matroska
  // statistics): true of a stream copy, stale for the re-encoded video, so not given back to it.
  std::vector<std::string> bitstream_tags;
};

struct Chapter {
  double start = 0.0;  // seconds, relative to the file's start time
  double end = 0.0;
  std::string title;
};

struct CarriedMetadata {
  std::string title;        // global "title" tag
  std::string timecode;     // global "timecode" tag (MXF and some MOV), "" when none
  double start_time = 0.0;  // the container's start, seconds
  std::vector<Chapter> chapters;
  std::vector<CarriedStream> streams;  // in file order
};

// Reads `file` with ffprobe (-show_format -show_streams -show_chapters). Errors: kInputInvalid
// when ffprobe fails or prints something unreadable.
Result<CarriedMetadata> ProbeCarried(const std::string& ffprobe, const SourceFile& file);

// The same from what ProbeMedia already read (MediaInfo::probe_json) of the file called `name`.
Result<CarriedMetadata> CarriedOf(const MediaInfo& info, const std::string& name);

// What an output container can hold of the above (decides both the plan and the check).
enum class ContainerFamily {
  kMatroska,  // .mkv/.mka: everything, attachments included
  kWebm,      // .webm: tracks, tags, dispositions and chapters; no attachments, WebVTT only
  kMp4,       // .mp4/.m4v/.mov/.3gp: tracks, languages, the default flag, chapters, the global
              // title, cover art and the timecode (a tmcd track); no track titles, no forced flag
  kOther,     // everything else: tracks only, nothing of the above is checked
};
// By the ffmpeg muxer name (MuxerForOutput).
ContainerFamily FamilyOfMuxer(const std::string& muxer);
const char* Name(ContainerFamily family);

// How one carried stream gets into the output.
enum class CarryMode {
  kCopy,         // -map 1:<index>, stream copy
  kCoverAsFile,  // cover art extracted to a file and attached (Matroska keeps cover art as an
                 // attachment: an attached picture mapped as a stream would become a video track)
};

struct CarriedEntry {
  CarriedStream source;  // the source's stream
  CarryMode mode = CarryMode::kCopy;
  std::string cover_file;  // kCoverAsFile: the extracted picture (set by the muxer)
  std::string convert_to;  // kCopy of a text subtitle the container cannot take as it is: the
                           // ffmpeg encoder to convert it with ("mov_text", "webvtt", "srt")
};

// The output's streams after the processed video (output stream 0), in output order: first the
// kCopy entries in source order, then the kCoverAsFile ones (ffmpeg adds attachments last).
struct CarriedPlan {
  ContainerFamily family = ContainerFamily::kOther;
  CarriedStream video;   // the source's video stream (tags, disposition, timecode)
  std::string timecode;  // the timecode the output's video must carry, "" when none
  std::vector<CarriedEntry> streams;
  std::vector<std::string> left_out;  // one line per source stream that cannot be carried, why
};

// `video_index` is the source's processed video stream. Subtitles go by stream copy where the
// container takes their codec (Matroska: all but mov_text; MP4: mov_text; WebM: WebVTT), text
// subtitles are converted to the container's text format where it does not, and bitmap ones
// that do not fit (or any subtitles in other containers) are left out. Further video streams that
// are not cover art are left out (they were not processed by the model), and so are data streams
// other than the timecode (which the output's video carries as its tag; MOV/MP4 muxers turn it into
// a tmcd track).
CarriedPlan PlanCarried(const CarriedMetadata& source, int video_index, ContainerFamily family);

// The ffmpeg output options for the plan, input 0 being the segments and input 1 the source:
// the -map of every kCopy stream, -attach of every cover file, the global metadata and chapters
// of input 1, every stream's own metadata from its source stream, and every stream's disposition
// set explicitly (ffmpeg would otherwise make the first stream of a type "default" on its own),
// and the encoder of each converted subtitle (`-c:N`). Stream copy for the rest (`-c copy`) must
// come BEFORE these arguments: ffmpeg takes the last codec option that matches a stream.
std::vector<std::string> CarriedArguments(const CarriedPlan& plan);

// Compares the output (`out`, probed) with the source under `plan`: stream types and order, the
// global title, chapters (count, start within 20 ms, titles), languages, titles and dispositions,
// attachments (name and type), cover art and timecode, each as far as plan.family holds it.
// Error: kVerifyFailed naming the first thing lost.
Status CheckCarriedMetadata(const CarriedMetadata& source, const CarriedPlan& plan,
                            const CarriedMetadata& out);

}  // namespace framemill
