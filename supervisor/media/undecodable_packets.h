// Which packets of a video stream give no picture, learnt by decoding a few of them with ffprobe,
// never the whole file: the first packets of a capture that begins mid-stream (between MPEG-2
// sequence headers, an H.264 stream before its SPS/PPS, an open GOP's leading B-frames), and the
// last packets of a file cut short (the packet cut through). A player skips them; so does a job.
// A damaged picture inside the stream (its start code destroyed) is found only by decoding every
// picture (FindUndecodablePictures), which a job does only once its decoder has shown fewer
// pictures than the packets promise (job/job_runner.h).
// Free functions; each runs one ffprobe (FindLeadingUndecodable a few, doubling its window).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

// What decoding some of a stream's packets showed.
struct PacketDecode {
  // Presentation times, as ffprobe prints them ("1.440000"), of the packets that gave no picture.
  std::set<std::string> undecodable;
  double first_shown = 0.0;  // seconds: the earliest picture decoded
  double last_shown = 0.0;   // seconds: the latest
  bool any_shown = false;
};

// For a stream whose first packet (0-based) `first_key` is its first keyframe, of `packets` in
// all: the leading packets that give no picture. Decodes the first keyframe and 64 packets past
// it, doubling the window until a picture shows (or it covers every packet).
Result<PacketDecode> FindLeadingUndecodable(const std::string& ffprobe, const SourceFile& source,
                                            int stream, int64_t first_key, int64_t packets);

// The trailing packets that give no picture: decodes from the keyframe before `from_s` (seconds)
// to the end of the file. Packets presented before the first picture decoded there (an open
// GOP's leading B-frames, whose references lie before the seek) are not judged.
Result<PacketDecode> FindTrailingUndecodable(const std::string& ffprobe, const SourceFile& source,
                                             int stream, double from_s);

// Every packet of the stream that gives no picture, wherever it lies: decodes the whole stream
// (as long as the job's own decode). Packets before the first picture count too.
Result<PacketDecode> FindUndecodablePictures(const std::string& ffprobe, const SourceFile& source,
                                             int stream);

// The fields of one line of ffprobe's csv output ("packet,1.480000,K_").
std::vector<std::string> CsvFields(const std::string& line);

// kInputInvalid: `path`'s packets could not be read (ffprobe's last lines), or `r`'s own error.
Status PacketReadError(const std::string& path, const Result<CommandOutput>& r);

}  // namespace framemill
