// Landlock: the kernel's file-system and network access control for unprivileged processes
// (Documentation/userspace-api/landlock.rst). A process builds a ruleset (which rights it wants
// the kernel to police, and the paths where each right stays allowed) and restricts itself with
// it; the restriction holds for the rest of its life and for every thread it starts afterwards.
//
// This file is the mechanism only: it maps the project's four access classes onto the rights of
// the kernel's Landlock ABI (1 to 7 are known here) and applies a list of rules. Which paths get
// which class is the worker's policy (worker/sandbox/sandbox_policy.h).
//
// What the ABI versions add: 1 the file rights; 2 REFER (linking and renaming across
// directories); 3 TRUNCATE; 4 TCP bind and connect; 5 IOCTL_DEV (ioctl on device files);
// 6 scoping (no abstract UNIX socket connections and no signals beyond the sandbox); 7 audit
// logging of denials (nothing to ask for: the default logs them). Every right the running
// kernel knows is handled (denied unless a rule allows it), so an older kernel gives a coarser
// sandbox, never an error.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace framemill {

// What a rule allows beneath its path (a file: on that file).
enum class FsAccess {
  kRead,       // read files, list directories
  kReadExec,   // kRead, and map files executable (libraries)
  kReadWrite,  // kRead, and write into existing files (no creating, removing, truncating)
  kDevice,     // kReadWrite, and ioctl on device files (GPU character devices)
  kTempFiles,  // kReadWrite, and create, truncate and remove regular files (CUDA's /dev/shm files)
  kOutput,     // kReadWrite, and truncate: a file a program writes whole (its output)
  kAll,        // every right Landlock handles (diagnosis only: FRAMEMILL_SANDBOX_EXTRA_ALL)
};
const char* Name(FsAccess access);

struct FsRule {
  FsRule() = default;
  FsRule(std::string p, FsAccess a, std::string w, std::string n = std::string())
      : path(std::move(p)), access(a), why(std::move(w)), named(std::move(n)) {}
  std::string path;
  FsAccess access = FsAccess::kRead;
  std::string why;  // for the debug listing: which need the rule serves
  // The path as the policy named it, when symbolic links make it differ from `path` ("/lib" for
  // "/usr/lib"), else "": the private root (worker/sandbox/mount_namespace.h) recreates those
  // links.
  std::string named;
};

// The Landlock ABI version of the running kernel (1, 2, ...), or -errno when Landlock is absent:
// -ENOSYS (kernel built without it), -EOPNOTSUPP (built in but not enabled at boot).
int LandlockAbi();

// Text for a negative LandlockAbi(): "not supported by this kernel (ENOSYS)", ...
std::string LandlockAbsentReason(int abi);

struct LandlockResult {
  int abi = 0;
  bool network = false;      // TCP bind and connect denied (ABI >= 4)
  bool scoped = false;       // abstract UNIX sockets and signals confined (ABI >= 6)
  bool file_system = false;  // file rules in force
  // One line per rule, "read-exec /usr/lib (libraries)", and per path skipped (missing).
  std::vector<std::string> rules;
};

// Restricts the calling thread (and threads it starts later) to `rules`: every right the kernel
// can police is denied except where a rule grants it; TCP bind and connect are denied outright
// (ABI >= 4); abstract UNIX sockets and signals are confined to the sandbox (ABI >= 6). A rule
// whose path does not exist is skipped (and listed). Needs no_new_privs set first (or
// CAP_SYS_ADMIN). Threads that already exist are NOT restricted: call it while single-threaded.
// Fails, leaving the process unrestricted, when Landlock is absent or a syscall fails.
// With `file_rules` false the file system is not policed at all (rules ignored): only the network
// and the scopes (the CUDA case, see worker/sandbox/sandbox.h).
Result<LandlockResult> ApplyLandlock(const std::vector<FsRule>& rules, bool file_rules = true);

}  // namespace framemill
