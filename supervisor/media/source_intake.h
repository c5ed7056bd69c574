// The source intake: the one way the supervisor takes in a file it reads as media (a job's input,
// the video of `framemill faces`, a segment or an output it wrote itself) or a job's other input
// files (a face table). A name is opened once and checked on the open descriptor
// (common/checked_file.h): a regular file (a FIFO is refused without blocking the open) whose
// real path lies inside the roots the caller names. The open file is then bound to the ffmpeg
// input restrictions (which demuxers and protocols ffprobe and ffmpeg may use on it, so that a
// playlist cannot make them open other files, devices or the network) and probed. Every later
// reader gets the descriptor as /proc/self/fd/N, never the name again.
//
// The roots are always named: InputRoots has no default, so a caller cannot leave them out by
// accident; one that checks none says so with InputRoots::Anywhere().
//
// Thread-safe: the only shared state is the restriction list, asked of each ffprobe once per
// process and kept under a lock.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/checked_file.h"
#include "common/config.h"
#include "common/status.h"
#include "common/user_rights.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// Where an input may lie.
class InputRoots {
 public:
  // Inside one of `roots` (real paths, symlinks followed); an empty list admits any path, as an
  // empty allowed_input_roots in the config does.
  static InputRoots Within(std::vector<std::string> roots) { return InputRoots(std::move(roots)); }
  // Anywhere: a file framemill wrote itself (its segments, its output), or one the person running
  // a command names on that command line (`framemill faces VIDEO`). Never a job's input.
  static InputRoots Anywhere() { return InputRoots({}); }

  const std::vector<std::string>& list() const { return roots_; }

 private:
  explicit InputRoots(std::vector<std::string> roots) : roots_(std::move(roots)) {}
  std::vector<std::string> roots_;
};

// Which demuxers an input may use. Playlist- and list-style demuxers make ffmpeg open other
// files or URLs named inside the input (hls, dash, concat, image2 patterns, imf, vobsub,
// webm_dash_manifest): refused unless the config allows them (allow_playlist_inputs). Devices,
// network demuxers (rtp, rtsp, sap, sdp) and script demuxers (avisynth, vapoursynth) are always
// refused.
enum class PlaylistInputs { kRefuse, kAllow };

// What an intake checks a file against and restricts it to. No field has a default.
struct SourceRules {
  std::string ffprobe;  // lists the demuxers (the restrictions) and probes
  InputRoots roots;
  PlaylistInputs playlists;
  // Whose rights the open file must grant reading as well (a spool job's submitter,
  // common/user_rights.h); null: the process's own alone. Not owned.
  const UserRights* reader;
};

// A job's input: the config's ffprobe, allowed_input_roots and allow_playlist_inputs, and the
// job's submitter as `reader` (null where the process runs for its own user).
SourceRules JobSourceRules(const Config& config, const UserRights* reader);

// Opens `path` read-only and checks the open file: a regular file inside `rules.roots` that
// `rules.reader` could read. `what` names it in messages ("input", "face_table").
// Errors: kInputMissing (no such file, unreadable, not a regular file: a FIFO or a directory),
// kPathNotAllowed (outside the roots, or not the reader's to read; the message names the file).
Result<UniqueFd> OpenInput(const std::string& path, const SourceRules& rules, const char* what);

// The ffmpeg input options that restrict reading an input: `-protocol_whitelist file,pipe` and
// `-format_whitelist` with every demuxer of this ffprobe except the refused ones (the list is
// asked of ffprobe once per process and kept). Errors: kIo when ffprobe cannot list them.
Result<std::vector<std::string>> InputRestrictions(const std::string& ffprobe,
                                                   PlaylistInputs playlists);

// The open input `fd` (still the caller's) as ffprobe and ffmpeg read it: the descriptor,
// `name` for messages, and the restrictions of `ffprobe` under `playlists`.
// Errors: InputRestrictions'.
Result<SourceFile> BindSource(int fd, const std::string& name, const std::string& ffprobe,
                              PlaylistInputs playlists);

// An input taken in: the descriptor it owns, the SourceFile bound to that descriptor, and what
// the probe read. Movable: the descriptor's number, which `source` holds, moves with it.
struct TakenSource {
  UniqueFd fd;
  SourceFile source;
  MediaInfo media;
};

// OpenInput, BindSource and ProbeMedia (`frame_times` and `truncation` as there), in that order.
// Errors: theirs, the first that fails.
Result<TakenSource> TakeSource(const std::string& path, const SourceRules& rules, bool frame_times,
                               TruncatedInput truncation = TruncatedInput::kRefuse);

// A file framemill wrote itself (a segment, its output) or a test or a benchmark made, probed
// with no roots and playlists refused: TakeSource's media. Never a job's input.
Result<MediaInfo> ProbeOwnFile(const std::string& ffprobe, const std::string& path,
                               bool frame_times);

}  // namespace framemill
