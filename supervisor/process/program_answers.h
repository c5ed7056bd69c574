// What a program says about itself (ffprobe's demuxers and devices, an ffmpeg encoder's pixel
// formats), kept on disk between runs.
//
// Debian's ffmpeg and ffprobe link about 215 shared libraries bound at start: each run costs
// 0.13 s of CPU before it does anything (0.25 s on a busy 2-core machine), and every
// `framemill run` asked three such questions before its first frame. The answers change only
// with the program, so they are kept in a file named by the question and the program's identity
// (its path, device, inode, size, modification and change times): a rebuilt or reinstalled
// program is asked again. An answer is also asked again after a day, in case only the program's
// shared libraries changed.
//
// Where: $CACHE_DIRECTORY (systemd's CacheDirectory=framemill for the service), else
// $XDG_CACHE_HOME/framemill, else $HOME/.cache/framemill. An answer file is believed only when it
// is a regular file of this user that no one else may write, in a directory of the same kind;
// anything else is ignored and the program asked. Nothing is kept when no directory is usable.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

// Runs argv like RunAndCapture (no descriptors handed over), or gives the answer kept from an
// earlier run of the same program with the same arguments: exit_code 0, `out` as it printed it,
// `err` empty. Only answers with exit code 0 are kept.
Result<CommandOutput> AskProgram(const std::vector<std::string>& argv);

// The directory answers are kept in (see above), "" when none is named.
std::string ProgramAnswersDir();

// How long a kept answer is believed, in seconds.
constexpr long kProgramAnswerMaxAgeS = 24 * 3600;

}  // namespace framemill
