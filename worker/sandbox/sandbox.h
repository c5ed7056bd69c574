// The worker's sandbox: what a worker process (and the model it runs, which is hostile input)
// can still do once it is in place. Applied by the worker itself, early in main, while it is one
// thread, before it reads the model or opens the supervisor's shared memory. Layers, in order:
//
//   descriptors   every inherited descriptor but 0, 1, 2 and the ones named by the caller (the
//                 model) is closed: nothing the supervisor holds leaks in by accident
//   rlimits       RLIMIT_CORE 0 and not dumpable (no core files, no ptrace attach by the same
//                 user); RLIMIT_FSIZE kMaxWorkerFileBytes (the stderr log is the only file a
//                 worker writes with write(); shared memory is written through mappings, which
//                 RLIMIT_FSIZE does not limit), SIGXFSZ ignored; RLIMIT_NOFILE kMaxWorkerFiles;
//                 RLIMIT_NPROC kMaxWorkerTasks (threads count: it only stops a thread storm,
//                 processes are seccomp's job)
//   no_new_privs  no set-uid or file capability can raise the process's privileges
//   namespaces    unshare(CLONE_NEWUSER | CLONE_NEWNET) where the system allows it (systemd's
//                 RestrictNamespaces or a sysctl may refuse): an empty network namespace. Not
//                 needed for "required": Landlock and seccomp already deny the network.
//   private root  a mount namespace whose root holds only the policy's paths
//                 (mount_namespace.h), made from the same rules as Landlock's. Every
//                 worker gets one where namespaces work; extra for a CPU worker (Landlock's file
//                 rules confine it already: the summary says "no mntns (reason)" without it),
//                 required for a CUDA worker, which has no Landlock file rules (below).
//   landlock      the file rules of sandbox_policy.h; no TCP bind or connect; no
//                 abstract UNIX sockets or signals beyond the sandbox (landlock.h)
//   seccomp       seccomp_filter.h: no processes, programs, ptrace, other families of
//                 sockets, namespaces, mounts, keyrings, BPF, perf, io_uring
//
// Modes (config worker_sandbox): kRequired fails unless no_new_privs, rlimits, Landlock and
// seccomp are all in place; kAuto applies what it can and reports the rest; kOff applies nothing.
//
// CUDA and Landlock's file rules do not go together: on an H200 (driver 580, kernel 6.18,
// Landlock ABI 7) any handled file-system right, even with every right granted beneath "/", makes
// cudaGetDeviceCount fail with error 304 ("OS call failed"), while Landlock's TCP rules and scopes,
// seccomp, the namespaces and the rlimits leave CUDA working (scripts/gpu/run-case.py sandbox).
// Something the driver opens is not beneath "/" (an internal file reopened through /proc, say).
// So a CUDA worker runs without Landlock file rules (its summary says "no file rules (CUDA)") and
// is confined to its files by the private root instead, which the namespaces leave working with
// CUDA: "landlock abi 7 (no file rules (CUDA), tcp, scopes), seccomp, no_new_privs, rlimits,
// mntns, netns". Without a private root (no user namespaces) a CUDA worker is refused in
// kRequired ("missing mntns (...)") and runs with a loud warning in kAuto.
//
// CUDA: the JIT cache (~/.nv/ComputeCache) is not writable in the sandbox, so the worker sets
// CUDA_CACHE_DISABLE=1: a PTX-only kernel is compiled again by each worker instead of being
// cached (LibTorch ships machine code for the GPUs it supports, so this is rare). A cache inside
// shared memory was the other choice; it would let one worker's model leave files that the next
// worker's driver reads.
//
// FRAMEMILL_SANDBOX_DEBUG=1 in the environment logs every rule at info level (at debug level
// otherwise), so that a failure on a new machine can be read from one run's log. For narrowing a
// failure down: FRAMEMILL_SANDBOX_LAYERS (a comma list of netns, rlimits, landlock, seccomp: only
// those are applied, so only "auto" runs; mntns names the private root) and
// FRAMEMILL_SANDBOX_EXTRA_READ (colon-separated paths Landlock may read besides its rules, also
// bound into the private root), with more in worker/sandbox/sandbox.cpp, landlock.cpp and
// mount_namespace.cpp (FRAMEMILL_SANDBOX_EXTRA_*, _NO_FS, _NO_NET, _NO_SCOPES,
// _MNTNS_NO_PIVOT), and scripts/gpu/run-case.py sandbox and privateroot.
// All are read from the supervisor's environment, never from a job.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "worker/sandbox/landlock.h"

namespace framemill {

inline constexpr long long kMaxWorkerFileBytes = 16ll << 20;  // the stderr log's ceiling
inline constexpr long long kMaxWorkerFiles = 4096;             // open descriptors
inline constexpr long long kMaxWorkerTasks = 16384;            // processes and threads, per user

struct SandboxOptions {
  WorkerSandbox mode = WorkerSandbox::kAuto;
  std::string control;        // the control object; its directory is the shared memory ("": none)
  std::vector<int> keep_fds;  // descriptors above 2 to keep open (the model)
  // The worker will drive an NVIDIA GPU: Landlock then polices the network and the scopes but not
  // the file system (see the CUDA note above).
  bool cuda = false;
  // Layers taken as missing from this machine, each with the reason the report gives ("" =
  // none): set only by a test build of the worker (worker/worker_hooks.h AdjustSandbox), to stand
  // for a kernel without Landlock or a system where no private root can be made.
  std::string landlock_absent;
  std::string mount_namespace_absent;
};

// What the worker got. Summary() is what the worker reports to the supervisor (shm_protocol.h
// WorkerChannel::sandbox) and logs:
//   "landlock abi 7 (fs, tcp, scopes), seccomp, no_new_privs, rlimits, mntns, netns"  all in place
//   "partial: seccomp, no_new_privs, rlimits; missing landlock (...)"           kAuto, degraded
//   "none; missing ..."                                                        kAuto, nothing
//   "off"                                                                      kOff
// (The supervisor tells a degraded sandbox by the words "partial" and "none" at the start:
// supervisor/workers/worker_pool.h WorkerSandboxDegraded.)
// An empty network namespace is extra: without it the sandbox is still complete, and the
// summary says "no netns (reason)" instead of "netns". So is the private root for a worker with
// Landlock's file rules ("no mntns (reason)"); for a CUDA worker it is a required layer.
// A test build leaves the private root out with SandboxOptions::mount_namespace_absent.
struct SandboxReport {
  bool off = false;
  std::vector<std::string> layers;   // in place
  std::vector<std::string> missing;  // "landlock (reason)": a required layer that failed
  std::string netns_note;            // why there is no network namespace; "" = there is one
  std::string mntns_note;            // why there is no private root; "" = there is one
  bool mntns_required = false;       // a CUDA worker: the missing private root is in `missing`
  std::string Summary() const;
  bool complete() const { return !off && missing.empty(); }
};

// An empty network namespace, inside a user namespace of its own (the process's own ids mapped)
// where the system allows that, else alone (root). Returns "" or why there is none. One thread.
std::string EnterEmptyNetwork();

// Applies the sandbox. In kRequired a missing layer is an error naming it (the process may be
// partly restricted then: it must not go on to read the model). In kAuto the report lists what
// is missing. Must be called while the process has one thread.
Result<SandboxReport> ApplySandbox(const SandboxOptions& options);

}  // namespace framemill
