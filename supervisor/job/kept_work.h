// `framemill run`'s kept work: the scratch directory of a job run by hand, beside its output,
// kept when the run does not finish so that the same command continues from its finished
// segments (JobOptions::keep_work). The service keeps its jobs' work in the spool instead.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/checked_file.h"
#include "common/status.h"

namespace framemill {

// ".<output's file name>.framemill": the kept work's name in the output's directory (a name too
// long for the file system is cut, with a hash of the whole to keep it unique).
std::string KeptWorkName(const std::string& output);

// The kept work, open: the directory (the job's scratch directory, which its children reach) and
// its lock, a second descriptor of the same directory that no child inherits (an orphaned ffmpeg
// must not keep the next run out).
struct KeptWork {
  UniqueFd dir;
  UniqueFd lock;  // flock'ed for as long as it is open
};

// Creates (mode 0700) or opens the directory `name` in `dir_fd` without following a link, checks
// that it is a directory of this user's that no one else may enter, and locks it (flock, not
// waiting); with `fresh`, empties it then (what an earlier run kept is thrown away). Errors:
// kOutputInvalid naming why (a link or another user's entry there; another run holding it), kIo.
Result<KeptWork> OpenKeptWork(int dir_fd, const std::string& name, bool fresh);

// What the kept segments are made from: {"input": ..., "model": ..., "settings": settings}, the
// files as device, inode, size and modification time (JobState::SetIdentity).
nlohmann::json KeptWorkIdentity(int input_fd, int model_fd, const std::string& settings);

// Whether a job that ended with `s`, with `segments_done` segments finished, keeps its work for
// a later run: yes when it was stopped or failed on the way (a crash, a worker, the encoder, a
// full disk); for an input that turned out bad (input_invalid) or an output that failed its
// checks (verify_failed), only when segments were finished (a night's work is not thrown away
// on a failure that may be the machine's); no when the job could not start as it is (its file,
// input, model or output is wrong), which a new run starts over anyway.
bool KeepsWork(const Status& s, int64_t segments_done);

}  // namespace framemill
