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
  int exit_code = -1;  // the exit status; -1 when killed by a signal
  int signal = 0;      // the signal that killed it, 0 when it exited
  std::string out;
  std::string err;
};

// The path of `program`: itself when it contains a '/', else the first match on PATH; "" if
// none is found.
std::string FindExecutable(const std::string& program);

// The worker program: `configured` when set (config key worker_binary), else framemill-worker
// beside the running framemill binary.
std::string WorkerBinaryPath(const std::string& configured);

// Every program RunAndCapture and RunForEachLine run is killed (SIGKILL) once it has run this
// long, and the call fails with kTimedOut naming it: a decoder looping on a hostile file costs
// its job, never the caller's thread. Config child_timeout_s, set once by the program before
// any job starts; 3600 s until then. Thread-safe.
void SetChildTimeout(double seconds);
double ChildTimeout();

// Runs argv[0] (found with FindExecutable) to completion, capturing stdout and stderr. The child
// keeps the descriptors in `inherit` (at the same numbers: /proc/self/fd/N names the same file in
// it) and no other descriptor above 2 (see child_fds.h). The child is always reaped.
// An error Status only when the program could not be started; a non-zero exit is in the result.
Result<CommandOutput> RunAndCapture(const std::vector<std::string>& argv,
                                    const std::vector<int>& inherit = {});

// Like RunAndCapture, but hands stdout to `on_line` one line at a time as it arrives (without
// the newline) instead of keeping it: for outputs that grow with the video's length (a line per
// packet), so that memory does not. `out` of the result stays empty.
Result<CommandOutput> RunForEachLine(const std::vector<std::string>& argv,
                                     const std::function<void(const std::string&)>& on_line,
                                     const std::vector<int>& inherit = {});

// Fills exit_code / signal of `out` from a raw wait status.
void SetExitStatus(int wait_status, CommandOutput* out);

// "exit code 1" / "killed by signal 9 (Killed)".
std::string DescribeExit(const CommandOutput& out);

// Last `max_lines` lines of a text (for error messages built from a child's stderr).
std::string LastLines(const std::string& text, int max_lines);

// The file's last `max_lines` lines, or "" when it cannot be read.
std::string LastLinesOfFile(const std::string& path, int max_lines);

}  // namespace framemill
