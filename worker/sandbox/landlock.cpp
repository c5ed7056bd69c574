#include "worker/sandbox/landlock.h"

#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/env_knobs.h"

namespace framemill {
namespace {

// The kernel's interface (include/uapi/linux/landlock.h), spelled out here: the build machine's
// headers may predate the ABI of the kernel the worker runs on.
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

constexpr uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

// File-system rights and the ABI that introduced them.
constexpr uint64_t kFsExecute = 1ull << 0;
constexpr uint64_t kFsWriteFile = 1ull << 1;
constexpr uint64_t kFsReadFile = 1ull << 2;
constexpr uint64_t kFsReadDir = 1ull << 3;
constexpr uint64_t kFsRemoveFile = 1ull << 5;
constexpr uint64_t kFsMakeReg = 1ull << 8;
constexpr uint64_t kFsAbi1 = (1ull << 13) - 1;  // EXECUTE .. MAKE_SYM: every right of ABI 1
constexpr uint64_t kFsRefer = 1ull << 13;       // ABI 2
constexpr uint64_t kFsTruncate = 1ull << 14;    // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15;    // ABI 5
// The rights that mean something on a file that is not a directory.
constexpr uint64_t kFsFileRights =
    kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;
// Network rights (ABI 4) and scopes (ABI 6).
constexpr uint64_t kNetBindTcp = 1ull << 0;
constexpr uint64_t kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0;
constexpr uint64_t kScopeSignal = 1ull << 1;

// The newest layout; an older kernel is given the prefix it knows (the size says which).
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI >= 4
  uint64_t scoped;              // ABI >= 6
};
constexpr size_t kRulesetAttrSizeAbi1 = 8;
constexpr size_t kRulesetAttrSizeAbi4 = 16;

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

uint64_t HandledFs(int abi) {
  uint64_t fs = kFsAbi1;
  if (abi >= 2) fs |= kFsRefer;
  if (abi >= 3) fs |= kFsTruncate;
  if (abi >= 5) fs |= kFsIoctlDev;
  return fs;
}

uint64_t Rights(FsAccess access) {
  const uint64_t read = kFsReadFile | kFsReadDir;
  switch (access) {
    case FsAccess::kRead:
      return read;
    case FsAccess::kReadExec:
      return read | kFsExecute;
    case FsAccess::kReadWrite:
      return read | kFsWriteFile;
    case FsAccess::kDevice:
      return read | kFsWriteFile | kFsIoctlDev;
    case FsAccess::kTempFiles:
      return read | kFsWriteFile | kFsMakeReg | kFsRemoveFile | kFsTruncate;
    case FsAccess::kOutput:
      return read | kFsWriteFile | kFsTruncate;
    case FsAccess::kAll:
      return ~0ull;  // masked by the handled rights
  }
  return 0;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status SysError(const std::string& what) {
  return Status(StatusCode::kIo, what + ": " + std::strerror(errno));
}

}  // namespace

const char* Name(FsAccess access) {
  switch (access) {
    case FsAccess::kRead:
      return "read";
    case FsAccess::kReadExec:
      return "read-exec";
    case FsAccess::kReadWrite:
      return "read-write";
    case FsAccess::kDevice:
      return "device";
    case FsAccess::kTempFiles:
      return "temp-files";
    case FsAccess::kOutput:
      return "output";
    case FsAccess::kAll:
      return "all";
  }
  return "?";
}

int LandlockAbi() {
  long abi = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? -errno : static_cast<int>(abi);
}

std::string LandlockAbsentReason(int abi) {
  switch (-abi) {
    case ENOSYS:
      return "Landlock is not supported by this kernel (ENOSYS)";
    case EOPNOTSUPP:
      return "Landlock is built into this kernel but not enabled (EOPNOTSUPP: add landlock to "
             "the lsm= boot parameter)";
    default:
      return std::string("Landlock cannot be used: ") + std::strerror(-abi);
  }
}

Result<LandlockResult> ApplyLandlock(const std::vector<FsRule>& rules, bool file_rules) {
  LandlockResult result;
  result.abi = LandlockAbi();
  if (result.abi <= 0) return Status(StatusCode::kIo, LandlockAbsentReason(result.abi));
  auto knob = [](EnvKnob k) { return KnobIsOne(k); };  // diagnosis only (worker/sandbox/sandbox.h)
  const uint64_t handled_fs =
      !file_rules || knob(EnvKnob::kSandboxNoFs) ? 0 : HandledFs(result.abi);
  result.file_system = handled_fs != 0;
  RulesetAttr attr{};
  attr.handled_access_fs = handled_fs;
  size_t attr_size = kRulesetAttrSizeAbi1;
  if (result.abi >= 4 && !knob(EnvKnob::kSandboxNoNet)) {
    // Handled with no rule that allows them: no TCP socket can bind or connect anywhere.
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    attr_size = kRulesetAttrSizeAbi4;
    result.network = true;
  }
  if (result.abi >= 6 && !knob(EnvKnob::kSandboxNoScopes)) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    attr_size = sizeof(RulesetAttr);
    result.scoped = true;
  }
  Fd ruleset(static_cast<int>(::syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0)));
  if (ruleset.get() < 0) return SysError("landlock_create_ruleset");

  for (const FsRule& rule : handled_fs != 0 ? rules : std::vector<FsRule>()) {
    Fd path(::open(rule.path.c_str(), O_PATH | O_CLOEXEC));
    if (path.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        result.rules.push_back(std::string("skipped (missing) ") + rule.path + " (" + rule.why +
                               ")");
        continue;
      }
      return SysError("landlock rule for " + rule.path);
    }
    struct stat st {};
    if (::fstat(path.get(), &st) != 0) return SysError("landlock rule for " + rule.path);
    PathBeneathAttr beneath{};
    beneath.allowed_access = Rights(rule.access) & handled_fs;
    if (!S_ISDIR(st.st_mode)) beneath.allowed_access &= kFsFileRights;
    beneath.parent_fd = path.get();
    if (::syscall(__NR_landlock_add_rule, ruleset.get(), kRulePathBeneath, &beneath, 0) != 0) {
      return SysError("landlock_add_rule for " + rule.path);
    }
    result.rules.push_back(std::string(Name(rule.access)) + " " + rule.path + " (" + rule.why +
                           ")");
  }
  if (::syscall(__NR_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return SysError("landlock_restrict_self");
  }
  return result;
}

}  // namespace framemill
