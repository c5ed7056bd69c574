#include "common/checked_file.h"

#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/posix_acl.h"

namespace framemill {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

std::string RootList(const std::vector<std::string>& roots) {
  std::string list;
  for (const std::string& root : roots) list += (list.empty() ? "" : ", ") + root;
  return list;
}

Status CheckInsideRoots(const std::string& what, const std::string& path, int fd,
                        const std::vector<std::string>& roots) {
  if (roots.empty()) return Status::Ok();
  std::string real = FdRealPath(fd);
  for (const std::string& root : roots) {
    if (!real.empty() && RealPathInside(real, root)) return Status::Ok();
  }
  return Status(StatusCode::kPathNotAllowed,
                what + " " + path + " (opened as " + real +
                    ") is outside the allowed roots: " + RootList(roots));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) Reset(std::exchange(o.fd_, -1));
  return *this;
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

std::string FdRealPath(int fd) {
  char buf[4096];
  ssize_t n = ::readlink(FdPath(fd).c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string RandomToken() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
    // getrandom cannot fail for 8 bytes once the pool is initialised; keep a name anyway.
    v = (static_cast<uint64_t>(::getpid()) << 32) ^ reinterpret_cast<uintptr_t>(&v);
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

bool RealPathInside(const std::string& real, const std::string& root) {
  std::string r = ResolvePath(root);
  if (r == "/") return true;
  return real == r ||
         (real.size() > r.size() && real.compare(0, r.size(), r) == 0 && real[r.size()] == '/');
}

Result<UniqueFd> OpenCheckedFile(CheckedKind kind, const std::string& path,
                                 const std::vector<std::string>& roots) {
  const bool input = kind == CheckedKind::kInput;
  const std::string what = input ? "input" : "model";
  const StatusCode missing = input ? StatusCode::kInputMissing : StatusCode::kModelInvalid;
  // O_NONBLOCK: a FIFO planted at the name must not block the open; it is refused below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    return Status(missing, path + ": " + what + " cannot be opened (" + ErrnoText() +
                               (input ? "): input does not exist or is not readable"
                                      : "): model file does not exist or is not readable"));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(missing, path + ": " + what + " is not a regular file");
  }
  FM_RETURN_IF_ERROR(CheckInsideRoots(what, path, fd.get(), roots));
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<UniqueFd> OpenCheckedDirectory(const std::string& dir,
                                      const std::vector<std::string>& roots) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return Status(StatusCode::kOutputInvalid,
                  dir + ": output directory does not exist (" + ErrnoText() + ")");
  }
  FM_RETURN_IF_ERROR(CheckInsideRoots("output directory", dir, fd.get(), roots));
  return fd;
}

Result<CreatedFile> CreateExclusiveAt(int dir_fd, const std::string& prefix,
                                      const std::string& suffix, unsigned mode) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string name = prefix + RandomToken() + suffix;
    int fd =
        ::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return CreatedFile{UniqueFd(fd), name};
    if (errno == EEXIST) continue;
    StatusCode code = errno == ENOSPC || errno == EDQUOT ? StatusCode::kNoSpace : StatusCode::kIo;
    return Status(code, "create " + FdRealPath(dir_fd) + "/" + name + ": " + ErrnoText());
  }
  return Status(StatusCode::kIo, "create " + prefix + "*" + suffix + ": every name taken");
}

Result<CreatedFile> MakePrivateDirectoryAt(int dir_fd, const std::string& prefix) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string name = prefix + RandomToken();
    if (::mkdirat(dir_fd, name.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;
      return Status(StatusCode::kIo,
                    "create directory " + FdRealPath(dir_fd) + "/" + name + ": " + ErrnoText());
    }
    int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      return Status(StatusCode::kIo,
                    "open directory " + FdRealPath(dir_fd) + "/" + name + ": " + ErrnoText());
    }
    return CreatedFile{UniqueFd(fd), name};
  }
  return Status(StatusCode::kIo, "create directory " + prefix + "*: every name taken");
}

Status RenameCheckedAt(int dir_fd, const std::string& from, int file_fd, const std::string& to,
                       RenameMode mode) {
  struct stat named {
  }, opened{};
  if (::fstatat(dir_fd, from.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 ||
      ::fstat(file_fd, &opened) != 0 || named.st_dev != opened.st_dev ||
      named.st_ino != opened.st_ino) {
    return Status(StatusCode::kIo, FdRealPath(dir_fd) + "/" + from +
                                       " is no longer the file framemill wrote; not renamed");
  }
  const unsigned flags = mode == RenameMode::kNoReplace ? RENAME_NOREPLACE : 0;
  if (::renameat2(dir_fd, from.c_str(), dir_fd, to.c_str(), flags) != 0) {
    if (errno == EEXIST) {
      return Status(StatusCode::kOutputInvalid,
                    FdRealPath(dir_fd) + "/" + to +
                        " appeared while the job ran; not replaced (set \"overwrite\": true)");
    }
    StatusCode code = errno == ENOSPC || errno == EDQUOT ? StatusCode::kNoSpace : StatusCode::kIo;
    return Status(
        code, "rename " + from + " to " + to + " in " + FdRealPath(dir_fd) + ": " + ErrnoText());
  }
  if (::fsync(dir_fd) != 0) {
    return Status(StatusCode::kIo, "fsync directory " + FdRealPath(dir_fd) + ": " + ErrnoText());
  }
  return Status::Ok();
}

Status RemoveTreeAt(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Status::Ok()
                           : Status(StatusCode::kIo, "stat " + name + ": " + ErrnoText());
  }
  if (S_ISDIR(st.st_mode)) {
    int sub = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return Status(StatusCode::kIo, "open " + name + ": " + ErrnoText());
    DIR* d = ::fdopendir(sub);
    if (d == nullptr) {
      ::close(sub);
      return Status(StatusCode::kIo, "read " + name + ": " + ErrnoText());
    }
    std::vector<std::string> children;
    while (struct dirent* e = ::readdir(d)) {
      std::string child = e->d_name;
      if (child != "." && child != "..") children.push_back(child);
    }
    Status first;
    for (const std::string& child : children) {
      Status s = RemoveTreeAt(::dirfd(d), child);
      if (first.ok() && !s.ok()) first = s;
    }
    ::closedir(d);
    FM_RETURN_IF_ERROR(first);
  }
  if (::unlinkat(dir_fd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
      errno != ENOENT) {
    return Status(StatusCode::kIo, "remove " + name + ": " + ErrnoText());
  }
  return Status::Ok();
}

Status GrantReadAcl(int fd, uint32_t uid) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status(StatusCode::kIo, "fstat: " + ErrnoText());
  const uint16_t owner = (st.st_mode >> 6) & 7, group = (st.st_mode >> 3) & 7,
                 other = st.st_mode & 7;
  const std::string acl = EncodeAcl({{AclTag::kUserObj, owner},
                                     {AclTag::kUser, 4, uid},
                                     {AclTag::kGroupObj, group},
                                     {AclTag::kMask, static_cast<uint16_t>(group | 4)},
                                     {AclTag::kOther, other}});
  if (::fsetxattr(fd, "system.posix_acl_access", acl.data(), acl.size(), 0) != 0) {
    return Status(StatusCode::kIo,
                  "cannot grant uid " + std::to_string(uid) + " read access (ACL): " + ErrnoText());
  }
  return Status::Ok();
}

}  // namespace framemill
