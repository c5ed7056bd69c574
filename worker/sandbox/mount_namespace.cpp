#include "worker/sandbox/mount_namespace.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/env_knobs.h"

namespace framemill {
namespace {

// mount_setattr(2) (Linux 5.12), spelled out here: <linux/mount.h> clashes with glibc's
// <sys/mount.h> on older glibc.
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};
constexpr uint64_t kAttrReadOnly = 0x1;
constexpr uint64_t kAttrNoSuid = 0x2;
constexpr uint64_t kAttrNoDev = 0x4;
constexpr uint64_t kAttrNoExec = 0x8;
constexpr unsigned kAtRecursive = 0x8000;

// Where the new root is built before the switch: an existing directory of the old root that a
// tmpfs may cover for a moment (the sources are open already, so nothing beneath it is lost).
const char* const kStagingCandidates[] = {"/tmp", "/mnt", "/var/tmp"};

// How many paths LinksToKeep walks at most (the named ones and the targets of links on the way).
constexpr size_t kMaxLinkWalks = 4096;

// Links the C library and programs expect beside the device nodes.
const char* const kDevLinks[] = {"/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"};

Status Fail(const std::string& what) {
  return Status(StatusCode::kIo, what + ": " + std::strerror(errno));
}

bool Beneath(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// The path with its directory's symlinks resolved and its last component kept as it is.
std::string ResolveParent(const std::string& path) {
  char buf[PATH_MAX];
  std::string dir = Dirname(path);
  if (::realpath(dir.c_str(), buf) == nullptr) return path;
  std::string parent = buf;
  return (parent == "/" ? "" : parent) + path.substr(path.rfind('/'));
}

bool IsSymlink(const std::string& path, std::string* target) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return false;
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return false;
  *target = std::string(buf, static_cast<size_t>(n));
  return true;
}

// Creates every missing directory of `path` (not `path` itself).
Status MakeParents(const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    std::string dir = path.substr(0, at);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Fail("mkdir " + dir);
  }
  return Status::Ok();
}

// Sets `set` on the mount at `path` (and those beneath it); falls back to a remount of that mount
// alone where mount_setattr is missing, keeping the flags the kernel will not let go of.
Status RestrictMount(const std::string& path, uint64_t set, bool recursive) {
  MountAttr attr{set, 0, 0, 0};
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), recursive ? kAtRecursive : 0u, &attr,
                sizeof(attr)) == 0) {
    return Status::Ok();
  }
  if (errno != ENOSYS) return Fail("mount_setattr " + path);
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return Fail("statvfs " + path);
  unsigned long flags = MS_REMOUNT | MS_BIND;
  if ((set & kAttrReadOnly) || (vfs.f_flag & ST_RDONLY)) flags |= MS_RDONLY;
  if ((set & kAttrNoSuid) || (vfs.f_flag & ST_NOSUID)) flags |= MS_NOSUID;
  if ((set & kAttrNoDev) || (vfs.f_flag & ST_NODEV)) flags |= MS_NODEV;
  if ((set & kAttrNoExec) || (vfs.f_flag & ST_NOEXEC)) flags |= MS_NOEXEC;
  if (::mount(nullptr, path.c_str(), nullptr, flags, nullptr) != 0) return Fail("remount " + path);
  return Status::Ok();
}

struct OpenSource {
  BindMount bind;
  int fd = -1;
  bool directory = false;
};

// Builds the tree under `staging` (a fresh tmpfs): private tmpfs, binds, links.
Status BuildTree(const std::string& staging, const std::vector<OpenSource>& sources,
                 const std::vector<PathLink>& links, PrivateRoot* out) {
  for (const char* dir : {"/tmp", "/dev/shm"}) {
    const std::string target = staging + dir;
    FM_RETURN_IF_ERROR(MakeParents(target));
    if (::mkdir(target.c_str(), 0755) != 0 && errno != EEXIST) return Fail("mkdir " + target);
    if (::mount("tmpfs", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, kPrivateTmpfsOptions) !=
        0) {
      return Fail(std::string("mount tmpfs on ") + dir);
    }
    out->lines.push_back(std::string("private tmpfs ") + dir + " (" + kPrivateTmpfsOptions + ")");
  }
  for (const OpenSource& s : sources) {
    const std::string target = staging + s.bind.path;
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) {
      FM_RETURN_IF_ERROR(MakeParents(target));
      if (s.directory) {
        if (::mkdir(target.c_str(), 0755) != 0) return Fail("mkdir " + target);
      } else {
        int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) return Fail("create mount point " + target);
        ::close(fd);
      }
    }
    // Through the descriptor opened before the staging tmpfs went on: the source as it was.
    const std::string source = "/proc/self/fd/" + std::to_string(s.fd);
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return Fail("bind " + s.bind.path);
    }
    uint64_t set = kAttrNoSuid;
    if (!s.bind.writable) set |= kAttrReadOnly;
    if (!s.bind.exec) set |= kAttrNoExec;
    FM_RETURN_IF_ERROR(RestrictMount(target, set, /*recursive=*/true));
    out->lines.push_back(std::string("bind ") + (s.bind.writable ? "rw" : "ro") +
                         (s.bind.exec ? ",exec " : " ") + s.bind.path);
  }
  for (const PathLink& link : links) {
    // A link inside a bind is there already; creating one would write into the real file system.
    bool inside = false;
    for (const OpenSource& s : sources) {
      inside = inside || link.path == s.bind.path || Beneath(link.path, s.bind.path);
    }
    const std::string target = staging + link.path;
    struct stat st {};
    if (inside || ::lstat(target.c_str(), &st) == 0) continue;
    FM_RETURN_IF_ERROR(MakeParents(target));
    if (::symlink(link.target.c_str(), target.c_str()) != 0) return Fail("symlink " + link.path);
    out->lines.push_back("link " + link.path + " -> " + link.target);
  }
  return Status::Ok();
}

}  // namespace

std::vector<BindMount> PlanBindMounts(const std::vector<FsRule>& rules) {
  std::map<std::string, BindMount> by_path;  // sorted: a parent comes before its children
  for (const FsRule& r : rules) {
    // "dir/" is "dir": the tree is built parents first, and "dir/"'s parent would be "dir".
    std::string path = r.path;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.empty() || path[0] != '/' || path == "/") continue;
    BindMount& b = by_path[path];
    b.path = path;
    b.writable = b.writable || (r.access != FsAccess::kRead && r.access != FsAccess::kReadExec);
    b.exec = b.exec || r.access == FsAccess::kReadExec || r.access == FsAccess::kDevice ||
             r.access == FsAccess::kAll;
  }
  std::vector<BindMount> plan;
  for (const auto& [path, b] : by_path) {
    bool covered = false;
    for (const BindMount& p : plan) {
      covered =
          covered || (Beneath(path, p.path) && (p.writable || !b.writable) && (p.exec || !b.exec));
    }
    if (!covered) plan.push_back(b);
  }
  return plan;
}

std::vector<PathLink> LinksToKeep(const std::vector<FsRule>& rules) {
  std::vector<std::string> named;
  for (const FsRule& r : rules) {
    if (!r.named.empty() && r.named[0] == '/') named.push_back(r.named);
  }
  for (const char* link : kDevLinks) named.push_back(link);
  if (DIR* root = ::opendir("/")) {
    while (dirent* e = ::readdir(root)) {
      if (e->d_name[0] != '.') named.push_back(std::string("/") + e->d_name);
    }
    ::closedir(root);
  }
  std::map<std::string, std::string> links;
  // Each component in turn: "/lib" of "/lib/x86_64-linux-gnu", then the whole. A link's target is
  // walked the same way, with the rest of the path after it, so that a chain of links
  // ("/usr/local/cuda" -> "/etc/alternatives/cuda" -> "/usr/local/cuda-13.0") is kept whole.
  // Bounded, so that a loop of links ends.
  for (size_t i = 0; i < named.size() && i < kMaxLinkWalks; ++i) {
    const std::string path = named[i];
    for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
      const std::string prefix = path.substr(0, at);
      std::string target;
      if (IsSymlink(prefix, &target)) {
        const std::string where = ResolveParent(prefix);
        if (links.emplace(where, target).second) {
          const std::string rest = at == std::string::npos ? "" : path.substr(at);
          named.push_back((target[0] == '/' ? target : Dirname(where) + "/" + target) + rest);
        }
        break;  // the rest of this path is walked from the target
      }
      if (at == std::string::npos) break;
    }
  }
  std::vector<PathLink> out;
  for (const auto& [path, target] : links) out.push_back({path, target});
  return out;
}

Result<PrivateRoot> EnterPrivateRoot(const std::vector<FsRule>& rules) {
  PrivateRoot result;
  const std::vector<PathLink> links = LinksToKeep(rules);
  if (::unshare(CLONE_NEWNS) != 0) return Fail("unshare(CLONE_NEWNS)");
  // Nothing done here reaches the namespace this one was copied from, and nothing from it
  // arrives here.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Fail("make / private");
  }
  // The sources, opened in the new namespace (a bind takes its source from the caller's own
  // namespace) and before the staging tmpfs covers anything.
  std::vector<OpenSource> sources;
  auto close_sources = [&sources] {
    for (OpenSource& s : sources) ::close(s.fd);
  };
  for (const BindMount& b : PlanBindMounts(rules)) {
    int fd = ::open(b.path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      result.lines.push_back("skipped " + b.path + " (" + std::strerror(errno) + ")");
      if (fd >= 0) ::close(fd);
      continue;
    }
    sources.push_back({b, fd, S_ISDIR(st.st_mode)});
  }
  std::string staging;
  for (const char* dir : kStagingCandidates) {
    struct stat st {};
    if (::stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      staging = dir;
      break;
    }
  }
  if (staging.empty()) {
    close_sources();
    return Status(StatusCode::kIo, "no directory to build the private root on (/tmp, /mnt)");
  }
  if (::mount("tmpfs", staging.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
    close_sources();
    return Fail("mount tmpfs on " + staging);
  }
  Status built = BuildTree(staging, sources, links, &result);
  close_sources();
  if (!built.ok()) {
    ::umount2(staging.c_str(), MNT_DETACH);  // back to the old root's view
    return built;
  }
  // Diagnosis (FRAMEMILL_SANDBOX_MNTNS_NO_PIVOT=1, set by whoever starts the supervisor): the tree
  // is built but the root stays, to tell a missing path from the switch itself.
  if (KnobIsOne(EnvKnob::kSandboxMntnsNoPivot)) {
    result.lines.push_back("diagnosis: FRAMEMILL_SANDBOX_MNTNS_NO_PIVOT, the old root stays");
    return result;
  }
  // The switch: the staging tmpfs becomes "/", the old root is stacked on it by pivot_root(".",
  // ".") and detached at once; from here on it cannot be reached.
  if (::chdir(staging.c_str()) != 0) return Fail("chdir " + staging);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    Status s = Fail("pivot_root");
    ::chdir("/");
    ::umount2(staging.c_str(), MNT_DETACH);
    return s;
  }
  if (::umount2(".", MNT_DETACH) != 0) return Fail("detach the old root");
  if (::chdir("/") != 0) return Fail("chdir /");
  FM_RETURN_IF_ERROR(RestrictMount("/", kAttrReadOnly | kAttrNoSuid | kAttrNoDev, false));
  result.lines.push_back("root: private tmpfs, read-only; old root detached");
  return result;
}

}  // namespace framemill
