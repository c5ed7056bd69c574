// What framemill-night needs of the machine: a private mount namespace with small tmpfs
// filesystems (so that "full" and "nothing in /dev/shm" concern only the night's own), filling
// and freeing them, the process tree below the night (it is a child subreaper, so that orphans of
// a killed service come to it), and starting programs with their output in a file.
// Free functions and small value types; single-threaded use.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace framemill::night {

// Enters a private mount namespace (unshare + / made rprivate) and makes this process a child
// subreaper. Returns "" on success, else why not (not root, no CAP_SYS_ADMIN, ...).
std::string EnterPrivateMounts();

// Mounts a tmpfs of `mib` MiB with `mode` on `path` (created when missing). "" or the error.
std::string MountTmpfs(const std::string& path, int mib, mode_t mode);

// A filler file that takes every free byte of a filesystem until freed.
struct Filler {
  std::string path;  // the filler's file; "" when not filling
  long long bytes = 0;
};

// Writes `dir`/.night-filler until ENOSPC (or a write error). Returns the filler.
Filler Fill(const std::string& dir);
// Removes the filler's file.
void Free(Filler* f);

// A process as /proc shows it.
struct Proc {
  pid_t pid = 0, ppid = 0;
  char state = '?';
  std::vector<std::string> argv;
};

// Every process whose parent chain leads to `root` (not `root` itself).
std::vector<Proc> Descendants(pid_t root);

// What an ffmpeg or worker process is, told by its argv.
enum class ProcKind { kWorker, kDecoder, kEncoder, kMux, kOtherFfmpeg, kOther };
ProcKind KindOf(const Proc& p);
const char* Name(ProcKind k);

// Starts argv[0] (looked up on PATH) with stdin from /dev/null and stdout and stderr appended to
// `log`. Returns the pid, -1 when it cannot start.
pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log);

// Runs argv to its end with stdout in `out` (stderr with it when `err` is null), through
// temporary files in `scratch`. Returns its exit code (128 + signal for a signal, -1 when it
// could not start).
int RunCapture(const std::vector<std::string>& argv, const std::string& scratch, std::string* out,
               std::string* err);

// Files and folders under `dir` (recursive, "" when missing), paths relative to it.
std::vector<std::string> ListTree(const std::string& dir);

std::string ReadText(const std::string& path);

}  // namespace framemill::night
