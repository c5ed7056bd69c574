// A private root for the worker: a mount namespace of its own (made inside the worker's user
// namespace, so it needs no privilege) whose file system holds only what the sandbox policy names
// (worker/sandbox/sandbox_policy.h), each path bound at its own place from the real file system:
//
//   /                 an empty tmpfs, read-only once built (directories, empty mount points and
//                     the symbolic links below, nothing else)
//   policy paths      bound read-only (read, read-exec: libraries, the executable, /sys,
//                     /proc/driver/nvidia ...) or read-write (the shared-memory directory,
//                     /dev/null, /dev/nvidia* device nodes, the worker's own /proc/PID, a test
//                     hook's marker directory); a read-only bind is read-only all the way down
//                     (mount_setattr AT_RECURSIVE), and none allows set-uid programs
//   /proc             no procfs of its own (that needs a pid namespace): only the policy's
//                     /proc entries, with /proc/self (and thread-self) as links to the worker's
//                     own /proc/PID. Other processes' /proc/PID directories (the supervisor's
//                     /proc/PID/root would lead back to the real root) are not there.
//   /tmp, /dev/shm    private tmpfs, read-write, 64 MiB each: seen by this worker alone and gone
//                     with it (the shared-memory directory is bound inside /dev/shm)
//   links             the symbolic links on the way to each policy path as the policy named it
//                     ("/lib" -> "usr/lib" on a merged /usr, "/etc/localtime", "/proc/self"),
//                     chains followed ("/usr/local/cuda" -> "/etc/alternatives/cuda" -> ...),
//                     and the ones directly in "/", so that names the dynamic loader and the
//                     libraries already hold keep resolving.
//
// Then the process's root is pivoted onto the new tree and the old root is detached: nothing
// else of the machine's file system can be reached by any path. Descriptors already open (the
// model, the wake socket, stderr) stay usable. Works with CUDA where Landlock's file rules do
// not (worker/sandbox/sandbox.h).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "worker/sandbox/landlock.h"

namespace framemill {

inline constexpr const char* kPrivateTmpfsOptions = "size=64m,mode=1777";

// One bind mount of the private root: `path` (absolute, symlinks resolved) from the real file
// system onto the same path in the new root.
struct BindMount {
  std::string path;
  bool writable = false;  // read-write; otherwise read-only
  bool exec = false;      // executable mappings allowed (libraries); otherwise noexec
  bool operator==(const BindMount& o) const {
    return path == o.path && writable == o.writable && exec == o.exec;
  }
};

// The bind mounts for `rules`, parents before children: a rule whose path lies beneath another
// rule's path that already allows everything it needs is left out (it is in that bind), two rules
// on one path become one bind with both rights. Read and read-exec rules are read-only, every
// other access class writable. Relative paths and "/" itself are left out (a bind over the whole
// root would undo the point). A path's trailing '/' is dropped ("dir/" is "dir").
std::vector<BindMount> PlanBindMounts(const std::vector<FsRule>& rules);

// A symbolic link to recreate in the new root: `path` holds `target` (as readlink returns it).
struct PathLink {
  std::string path;
  std::string target;
};

// The symbolic links on the way to each rule's path as named (FsRule::named), to /dev/fd and the
// standard streams, and those directly in "/", each link's own target walked too (at most
// 4096 paths, so that a loop of links ends), read from the real file system now.
std::vector<PathLink> LinksToKeep(const std::vector<FsRule>& rules);

struct PrivateRoot {
  std::vector<std::string> lines;  // one per mount, link or skipped path: the debug listing
};

// Enters a new mount namespace and makes the private root described above from `rules` the
// process's root (its working directory becomes "/"). Needs CAP_SYS_ADMIN in the user namespace
// that owns the current mount namespace (the worker's own user namespace, or real root), and no
// seccomp filter yet. A rule whose path does not exist is skipped and listed. On an error before
// the switch the process keeps its old root (inside the new namespace, with nothing visible
// changed); the message names the step and errno.
Result<PrivateRoot> EnterPrivateRoot(const std::vector<FsRule>& rules);

}  // namespace framemill
