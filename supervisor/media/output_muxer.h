// The last stage of a job: join the encoded segments by stream copy, add the source's audio and
// subtitle streams by stream copy, check the result, and only then move it to the output path.
#pragma once

#include <cstdint>
#include <climits>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "common/checked_file.h"
#include "common/status.h"
#include "supervisor/media/carried_metadata.h"
#include "supervisor/media/color_path.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/media/output_geometry.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

struct MuxRequest {
  std::string ffmpeg;
  std::string ffprobe;
  std::string mkvmerge = "mkvmerge";  // for variable-frame-rate sources only
  SourceFile source;                  // the job's input (audio and subtitles come from it)
  const MediaInfo* source_info = nullptr;
  std::vector<std::string> segments;    // encoded segment files, in order, under scratch_dir
  std::vector<int64_t> segment_frames;  // frames in each segment
  Rational frame_rate;                  // the rate the segments were encoded at
  // The job's private scratch directory, open: scratch_dir is FdPath(scratch_fd), a name that
  // children inheriting scratch_fd resolve to the same directory. It holds the segments, the
  // concat list and ffmpeg's log.
  std::string scratch_dir;
  int scratch_fd = -1;
  // The output: the checked, open directory and the name in it. Written only when verified.
  int output_dir_fd = -1;
  std::string output_name;
  std::string output;      // the output path as the job gave it (messages only)
  bool overwrite = false;  // an existing entry at output_name may be replaced (never followed)
  uint32_t output_reader_uid = UINT32_MAX;  // granted read access through an ACL; none: UINT32_MAX
  // The output's displayed geometry (output_geometry.h): its size (the model's output, upright),
  // sample aspect ratio and field order. Verification compares the displayed size and aspect.
  OutputGeometry geometry;
  // depth (supervisor/media/depth_check.h): the output's pixel format ("" = unchecked), its encoder
  // and its colour path.
  std::string expected_pix_fmt;
  std::string codec;
  ColorPath expected_color;
  // The source's streams, chapters and tags (ProbeCarried), when the caller probed them ahead of
  // the mux (the job runner does, while the frames are rendered); probed here when empty.
  std::optional<CarriedMetadata> source_carried;
};

// The output is written into a file created exclusively under a random hidden name in the output
// directory (mode 0666 less the umask), through its descriptor, and renamed into place once
// verified; a link at the output name is replaced, never followed. On success the output exists,
// fsynced. On failure nothing is left at the output path or beside it.
Status MuxAndVerify(const MuxRequest& request);

// The pieces of MuxAndVerify, for the mux that follows the render (live_mux.h), which runs the
// same join with its segments coming through pipes.

// The concat demuxer's list of `segments` (paths as ffmpeg opens them), each lasting exactly its
// frames at `rate`. Without the durations the concat demuxer takes them from the files, and a
// segment whose first frame is presented after its first decode (B-frames shift the first
// timestamp by the reorder delay) would open a gap of that delay at every join.
std::string ConcatList(const std::vector<std::string>& segments,
                       const std::vector<int64_t>& frames, const Rational& rate);
// ffmpeg's input options for a concat list written by ConcatList.
std::vector<std::string> ConcatInput(const std::string& list_path);

// What the join carries besides the video: the source's streams and tags (rq.source_carried, or
// probed now), the plan for them in the output's container, cover art extracted for Matroska.
struct JoinPlan {
  std::string muxer;  // MuxerForOutput
  CarriedMetadata carried;
  CarriedPlan plan;
};
Result<JoinPlan> PlanJoin(const MuxRequest& rq);

// The output file, created exclusively under a random hidden name in the output directory
// (".framemill-partial.<random>.<ext>", mode 0666 less the umask), its name noted in the scratch
// directory until it is placed or removed; the one an earlier run of the job noted (it died
// mid-join) is removed first.
Result<CreatedFile> CreatePartialOutput(const MuxRequest& rq);
// The note in the scratch directory, written just before the output is renamed into place:
// the placed file's device and inode, which a later run of the job (the process died before it
// filed the job) recognizes with IsPlacedOutput.
inline constexpr const char* kPlacedOutputNote = "placed-output.note";
// Whether `output` (an lstat of the output's name) is the file the note `note_path` records.
bool IsPlacedOutput(const std::string& note_path, const struct stat& output);
// A verified output that is cut short while its disk has less free than this is kNoSpace.
inline constexpr uint64_t kFullDiskBytes = 4u << 20;
// Removes the partial output if its name still is the file framemill created, and its note.
void RemovePartialOutput(const MuxRequest& rq, const CreatedFile& partial);

// The join's ffmpeg command: the video from `video_input` (ffmpeg input options), every other
// stream from the source, written to `partial_fd`. The child must inherit rq.scratch_fd,
// rq.source.fd, partial_fd and any descriptor video_input names.
std::vector<std::string> JoinArguments(const MuxRequest& rq, const JoinPlan& join,
                                       const std::vector<std::string>& video_input,
                                       int partial_fd);
// The error for a join whose ffmpeg could not start (`r` an error) or failed: kNoSpace,
// kEncoderCrashed (a signal) or kEncodeFailed, with ffmpeg's last lines.
Status JoinFailed(const MuxRequest& rq, const Result<CommandOutput>& r);

// The joined partial output verified (frames, duration, geometry, audio streams, depth and
// colour, carried streams and tags), given the reader's ACL, fsynced and renamed to the output
// name. On failure the partial output is removed.
Status PlaceOutput(const MuxRequest& rq, const JoinPlan& join, const CreatedFile& partial);

// The ffmpeg muxer for an output file name, by its extension (the output is written through a
// descriptor, so ffmpeg cannot guess it). Error: kOutputInvalid for an extension not known here.
Result<std::string> MuxerForOutput(const std::string& output);

}  // namespace framemill
