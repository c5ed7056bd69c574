// Running helper programs (ffmpeg, ffprobe) through Boost.Process and capturing their output.
// (Boost 1.74's limit_handles also closes the pipes of the redirections it is combined with, so
// it is not used; pipes that outlive a spawn are made O_CLOEXEC instead, see ffmpeg_pipes.cpp.)
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
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

// Programs that parse hostile media (ffprobe, ffmpeg) run confined: each of `programs` (found with
// FindExecutable) that RunAndCapture, RunForEachLine or a MediaLaunch start runs under `launcher`
// (framemill-confine, worker/sandbox/confine_main.cpp) with `mode` ("required" | "auto"), which
// lets it read only the standard libraries, a few system files and the descriptors it inherits,
// and write only those of them that are regular files open for writing (its outputs). So every
// file such a program reads or writes is handed to it as a descriptor (/proc/self/fd/N), or lies
// beneath a directory handed so (read only). An empty launcher confines nothing (config
// worker_sandbox off). Set once by the program at start, like SetChildTimeout. Thread-safe.
void ConfineMediaPrograms(const std::string& launcher, const std::string& mode,
                          const std::vector<std::string>& programs);

// ConfineMediaPrograms as the config says: ffprobe and ffmpeg confined as the workers are
// (worker_sandbox's mode, set by then), through ConfineBinaryPath(); nothing with worker_sandbox
// off.
void ConfineMediaPrograms(const Config& config);

// The launcher: framemill-confine beside the running framemill binary.
std::string ConfineBinaryPath();

// What to start for a command: argv[0] found on PATH with argv's arguments, or, confined, the
// launcher with its own arguments (a rule for each descriptor of `inherit`, as
// ConfineMediaPrograms says) and then the program's.
struct Launch {
  std::string exe;  // started
  std::vector<std::string> args;
  std::string name;  // the program asked for (for messages)
  // How much nicer than the supervisor (and its workers) it runs: give it to ChildFds. 0 but for
  // MediaLaunch's, which take MediaNiceness().
  int nicer = 0;
};
// argv as it is (argv[0] found on PATH), never confined.
Result<Launch> PlainLaunch(const std::vector<std::string>& argv);
// argv as RunAndCapture starts it: confined when argv[0] is one of ConfineMediaPrograms'
// programs, with `inherit`'s rules. For the programs a caller drives itself (the decoder, the
// encoders, the live mux), which run MediaNiceness() nicer. kIo when argv[0] is not found.
Result<Launch> MediaLaunch(const std::vector<std::string>& argv, const std::vector<int>& inherit);

// How much nicer than the workers a job's decoding, encoding and joining ffmpeg run: the
// diagnosis knob FRAMEMILL_MEDIA_NICE (1-19; unset, or anything else, 0 with a warning for the
// latter). For measuring whether those programs take the CPU a GPU worker needs to launch its
// kernels on a machine whose cores they fill. Read once; thread-safe.
int MediaNiceness();
// The same, confined whatever argv[0] is whenever a launcher is set.
Result<Launch> ConfinedLaunch(const std::vector<std::string>& argv,
                              const std::vector<int>& inherit);

// Runs argv[0] (found with FindExecutable) to completion, capturing stdout and stderr. The child
// keeps the descriptors in `inherit` (at the same numbers: /proc/self/fd/N names the same file in
// it) and no other descriptor above 2 (see child_fds.h). The child is always reaped.
// An error Status only when the program could not be started, or was killed: kTimedOut
// (child_timeout_s), kCancelled once `stop` (may be null) is set; a non-zero exit is in the
// result.
Result<CommandOutput> RunAndCapture(const std::vector<std::string>& argv,
                                    const std::vector<int>& inherit = {},
                                    const std::atomic<bool>* stop = nullptr);

// Like RunAndCapture, but hands stdout to `on_line` one line at a time as it arrives (without
// the newline) instead of keeping it: for outputs that grow with the video's length (a line per
// packet), so that memory does not. `out` of the result stays empty. An exception from `on_line`
// kills the child (kInternal naming it); `stop` as RunAndCapture's.
Result<CommandOutput> RunForEachLine(const std::vector<std::string>& argv,
                                     const std::function<void(const std::string&)>& on_line,
                                     const std::vector<int>& inherit = {},
                                     const std::atomic<bool>* stop = nullptr);

// Fills exit_code / signal of `out` from a raw wait status.
void SetExitStatus(int wait_status, CommandOutput* out);

// "exit code 1" / "killed by signal 9 (Killed)".
std::string DescribeExit(const CommandOutput& out);

// Last `max_lines` lines of a text (for error messages built from a child's stderr).
std::string LastLines(const std::string& text, int max_lines);

// The file's last `max_lines` lines, or "" when it cannot be read.
std::string LastLinesOfFile(const std::string& path, int max_lines);

}  // namespace framemill
