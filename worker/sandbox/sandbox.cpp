#include "worker/sandbox/sandbox.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/env_knobs.h"
#include "common/log_lines.h"
#include "worker/sandbox/landlock.h"
#include "worker/sandbox/mount_namespace.h"
#include "worker/sandbox/sandbox_policy.h"
#include "worker/sandbox/seccomp_filter.h"

namespace framemill {
namespace {

bool DebugListing() {
  return KnobIsOne(EnvKnob::kSandboxDebug);
}

void LogRule(const std::string& line) {
  if (DebugListing()) {
    LogInfo("sandbox: " + line);
  } else {
    LogDebug("sandbox: " + line);
  }
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Diagnosis on a new machine: FRAMEMILL_SANDBOX_LAYERS=netns,mntns,rlimits,landlock,seccomp applies
// only the layers it names (the others count as missing, so only worker_sandbox "auto" runs), and
// FRAMEMILL_SANDBOX_EXTRA_READ=/a:/b adds read rules to Landlock's, FRAMEMILL_SANDBOX_EXTRA_WRITE
// device (read-write-ioctl) and temp-file (create, truncate, remove) ones,
// FRAMEMILL_SANDBOX_EXTRA_TEMP temp-file ones, FRAMEMILL_SANDBOX_EXTRA_ALL every right,
// FRAMEMILL_SANDBOX_NO_SCOPES=1 leaves out Landlock's scopes. Set by whoever starts the
// supervisor, never by a job.
bool LayerWanted(const char* layer) {
  const std::optional<std::string>& v = Knob(EnvKnob::kSandboxLayers);
  if (!v) return true;
  std::string list = "," + *v + ",";
  return list.find(std::string(",") + layer + ",") != std::string::npos;
}

std::vector<FsRule> ExtraRules(EnvKnob variable, const std::vector<FsAccess>& rights) {
  std::vector<FsRule> rules;
  const std::optional<std::string>& v = Knob(variable);
  if (!v) return rules;
  const std::string& list = *v;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    std::string path = list.substr(start, end - start);
    if (!path.empty() && path[0] == '/') {
      for (FsAccess a : rights) rules.push_back({path, a, std::string(Info(variable).name) + " (diagnosis)"});
    }
    start = end + 1;
  }
  return rules;
}

std::vector<int> OpenDescriptors() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = std::atoi(e->d_name);
    if (fd != ::dirfd(dir)) fds.push_back(fd);
  }
  ::closedir(dir);
  return fds;
}

// Closes every descriptor above 2 not in `keep`.
void CloseInherited(const std::vector<int>& keep) {
  for (int fd : OpenDescriptors()) {
    if (fd <= 2 || std::find(keep.begin(), keep.end(), fd) != keep.end()) continue;
    char target[PATH_MAX] = "?";
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (n > 0) target[n] = '\0';
    LogRule("closed inherited descriptor " + std::to_string(fd) + " (" + target + ")");
    ::close(fd);
  }
}

int ThreadCount() {
  int n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
    ::closedir(dir);
  }
  return n;
}

// Lowers a limit (soft and hard) to at most `value`; never raises one.
Status Lower(int resource, const char* name, rlim_t value) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0) return Status(StatusCode::kIo, Errno(name));
  r.rlim_cur = std::min(r.rlim_cur, value);
  r.rlim_max = std::min(r.rlim_max, value);
  if (::setrlimit(resource, &r) != 0) return Status(StatusCode::kIo, Errno(name));
  LogRule(std::string("limit ") + name + " " + std::to_string(r.rlim_cur));
  return Status::Ok();
}

Status SetLimits() {
  FM_RETURN_IF_ERROR(Lower(RLIMIT_CORE, "RLIMIT_CORE", 0));
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return Status(StatusCode::kIo, Errno("PR_SET_DUMPABLE"));
  }
  // A write past the limit fails with EFBIG instead of killing the worker.
  ::signal(SIGXFSZ, SIG_IGN);
  FM_RETURN_IF_ERROR(Lower(RLIMIT_FSIZE, "RLIMIT_FSIZE", kMaxWorkerFileBytes));
  FM_RETURN_IF_ERROR(Lower(RLIMIT_NOFILE, "RLIMIT_NOFILE", kMaxWorkerFiles));
  FM_RETURN_IF_ERROR(Lower(RLIMIT_NPROC, "RLIMIT_NPROC", kMaxWorkerTasks));
  return Status::Ok();
}

bool WriteFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The file-system policy with the diagnosis variables' extra rules: what Landlock
// allows and what the private root holds.
std::vector<FsRule> PolicyRules(const SandboxOptions& options) {
  std::vector<FsRule> rules = WorkerFsRules(options.control);
  for (FsRule& r : ExtraRules(EnvKnob::kSandboxExtraRead, {FsAccess::kRead})) {
    rules.push_back(std::move(r));
  }
  for (FsRule& r :
       ExtraRules(EnvKnob::kSandboxExtraWrite, {FsAccess::kDevice, FsAccess::kTempFiles})) {
    rules.push_back(std::move(r));
  }
  return rules;
}

// The private root (worker/sandbox/mount_namespace.h). Returns "" or why there is none.
std::string EnterMountNamespace(const std::vector<FsRule>& rules, const SandboxOptions& options) {
  if (!LayerWanted("mntns")) return "left out by FRAMEMILL_SANDBOX_LAYERS";
  if (!options.mount_namespace_absent.empty()) return options.mount_namespace_absent;
  Result<PrivateRoot> root = EnterPrivateRoot(rules);
  if (!root.ok()) return root.status().message();
  for (const std::string& line : root->lines) LogRule("mntns " + line);
  return "";
}

}  // namespace

// An empty network namespace, inside a user namespace of its own where the system allows that
// (then it needs no privilege), else alone (root). Returns "" or why there is none.
std::string EnterEmptyNetwork() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    // Map the worker's own ids, so that it stays itself to every library that asks.
    if (!WriteFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !WriteFile("/proc/self/setgroups", "deny") ||
        !WriteFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
      LogRule(Errno("user namespace id maps not written"));
    }
    LogRule("namespaces: new user and network namespaces");
    return "";
  }
  std::string why = Errno("unshare(CLONE_NEWUSER|CLONE_NEWNET)");
  if (::unshare(CLONE_NEWNET) == 0) {
    LogRule("namespaces: new network namespace (" + why + ")");
    return "";
  }
  return why;
}

std::string SandboxReport::Summary() const {
  if (off) return "off";
  std::string s;
  for (const std::string& l : layers) s += (s.empty() ? "" : ", ") + l;
  if (mntns_note.empty()) {
    if (!layers.empty()) s += ", mntns";
  } else if (!layers.empty() && !mntns_required) {
    s += ", no mntns (" + mntns_note + ")";
  }
  if (netns_note.empty()) {
    if (!layers.empty()) s += ", netns";
  } else if (!layers.empty()) {
    s += ", no netns (" + netns_note + ")";
  }
  if (missing.empty()) return s;
  std::string m;
  for (const std::string& l : missing) m += (m.empty() ? "" : ", ") + l;
  return (layers.empty() ? "none" : "partial: " + s) + "; missing " + m;
}

Result<SandboxReport> ApplySandbox(const SandboxOptions& options) {
  SandboxReport report;
  if (options.mode == WorkerSandbox::kOff) {
    report.off = true;
    return report;
  }
  const bool required = options.mode == WorkerSandbox::kRequired;
  // A layer that failed: the end of a required sandbox, a note in an automatic one.
  auto missing = [&](const std::string& layer, const std::string& why) -> Status {
    report.missing.push_back(layer + " (" + why + ")");
    if (!required) {
      LogWarn("sandbox: no " + layer + ": " + why);
      return Status::Ok();
    }
    return Status(StatusCode::kWorkerFailed,
                  "worker_sandbox is \"required\" but this worker cannot be sandboxed: " + layer +
                      ": " + why +
                      " (set worker_sandbox to \"auto\" to run unconfined where the "
                      "sandbox is not available)");
  };

  CloseInherited(options.keep_fds);
  const int threads = ThreadCount();

  // Namespaces first: writing the id maps needs a dumpable process and no Landlock yet.
  report.netns_note =
      LayerWanted("netns") ? EnterEmptyNetwork() : "left out by FRAMEMILL_SANDBOX_LAYERS";
  if (!report.netns_note.empty()) LogRule("no network namespace: " + report.netns_note);

  // The private root next: it needs the user namespace's rights and no seccomp filter yet, and
  // its rules are read from the real file system first. Landlock then polices the same paths
  // inside it. A CUDA worker has no Landlock file rules, so there the private root is required.
  const std::vector<FsRule> rules = PolicyRules(options);
  report.mntns_note = EnterMountNamespace(rules, options);
  if (!report.mntns_note.empty()) {
    LogRule("no mount namespace: " + report.mntns_note);
    if (options.cuda) {
      report.mntns_required = true;
      // Short: the summary travels in a fixed-size field of the channel.
      FM_RETURN_IF_ERROR(missing("mntns", report.mntns_note + "; needed by a CUDA worker"));
    }
  }

  Status limits = LayerWanted("rlimits")
                      ? SetLimits()
                      : Status(StatusCode::kIo, "left out by FRAMEMILL_SANDBOX_LAYERS");
  if (!limits.ok()) FM_RETURN_IF_ERROR(missing("rlimits", limits.message()));

  bool no_new_privs = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
  if (!no_new_privs) FM_RETURN_IF_ERROR(missing("no_new_privs", Errno("PR_SET_NO_NEW_PRIVS")));

  std::string landlock_layer;
  if (!LayerWanted("landlock")) {
    FM_RETURN_IF_ERROR(missing("landlock", "left out by FRAMEMILL_SANDBOX_LAYERS"));
  } else if (threads > 1) {
    FM_RETURN_IF_ERROR(missing("landlock", std::to_string(threads) +
                                               " threads run already; Landlock would confine "
                                               "only this one"));
  } else if (!no_new_privs) {
    FM_RETURN_IF_ERROR(missing("landlock", "needs no_new_privs"));
  } else {
    Result<LandlockResult> ll = options.landlock_absent.empty()
                                    ? ApplyLandlock(rules, !options.cuda)
                                    : Result<LandlockResult>(Status(StatusCode::kIo, options.landlock_absent));
    if (!ll.ok()) {
      FM_RETURN_IF_ERROR(missing("landlock", ll.status().message()));
    } else {
      for (const std::string& rule : ll->rules) LogRule("landlock " + rule);
      std::string parts = ll->file_system ? "fs" : "no file rules (CUDA)";
      if (ll->network) parts += ", tcp";
      if (ll->scoped) parts += ", scopes";
      if (!ll->network) LogRule("landlock: no network rules before ABI 4: seccomp denies sockets");
      landlock_layer = "landlock abi " + std::to_string(ll->abi) + " (" + parts + ")";
    }
  }

  SeccompPolicy policy = DefaultSeccompPolicy();
  Status seccomp = !LayerWanted("seccomp")
                       ? Status(StatusCode::kIo, "left out by FRAMEMILL_SANDBOX_LAYERS")
                   : no_new_privs ? InstallSeccompFilter(policy)
                                  : Status(StatusCode::kIo, "needs no_new_privs");
  if (seccomp.ok()) {
    for (const std::string& line : DescribeSeccompPolicy(policy)) LogRule(line);
  } else {
    FM_RETURN_IF_ERROR(missing("seccomp", seccomp.message()));
  }

  if (!landlock_layer.empty()) report.layers.push_back(landlock_layer);
  if (seccomp.ok()) report.layers.push_back("seccomp");
  if (no_new_privs) report.layers.push_back("no_new_privs");
  if (limits.ok()) report.layers.push_back("rlimits");
  return report;
}

}  // namespace framemill
