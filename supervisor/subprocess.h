// Running helper programs (ffmpeg, ffprobe) through Boost.Process and capturing their output.
// (Boost 1.74's limit_handles also closes the pipes of the redirections it is combined with, so
// it is not used; pipes that outlive a spawn are made O_CLOEXEC instead, see ffmpeg_pipes.cpp.)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

struct CommandOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The path of `program`: itself when it contains a '/', else the first match on PATH; "" if
// none is found.
std::string FindExecutable(const std::string& program);

// The worker program: `configured` when set (config key worker_binary), else framemill-worker
// beside the running framemill binary.
std::string WorkerBinaryPath(const std::string& configured);

// Runs argv[0] (found with FindExecutable) to completion, capturing stdout and stderr.
// An error Status only when the program could not be started; a non-zero exit is in the result.
Result<CommandOutput> RunAndCapture(const std::vector<std::string>& argv);

// Like RunAndCapture, but hands stdout to `on_line` one line at a time as it arrives (without
// the newline) instead of keeping it: for outputs that grow with the video's length (a line per
// packet), so that memory does not. `out` of the result stays empty.
Result<CommandOutput> RunForEachLine(const std::vector<std::string>& argv,
                                     const std::function<void(const std::string&)>& on_line);

// Last `max_lines` lines of a text (for error messages built from a child's stderr).
std::string LastLines(const std::string& text, int max_lines);

// The file's last `max_lines` lines, or "" when it cannot be read.
std::string LastLinesOfFile(const std::string& path, int max_lines);

}  // namespace framemill
