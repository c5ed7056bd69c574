#include "common/file_util.h"

#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include "common/checked_file.h"

namespace framemill {
namespace {

Status Errno(const std::string& what) {
  StatusCode code = errno == ENOSPC || errno == EDQUOT ? StatusCode::kNoSpace : StatusCode::kIo;
  return Status(code, what + ": " + std::strerror(errno));
}

}  // namespace

Status WriteAllToFd(int fd, const std::string& bytes, const std::string& what) {
  return WriteAllToFd(fd, bytes.data(), bytes.size(), what);
}

Status WriteAllToFd(int fd, const void* data, size_t n, const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Errno("write " + what);
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Result<bool> ReadAllFromFd(int fd, void* data, size_t n, const std::string& what) {
  auto* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Errno("read " + what);
    if (r == 0) {
      if (got == 0) return false;
      return Status(StatusCode::kIo, "read " + what + ": the stream ended in a record");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

std::string DirName(const std::string& path) {
  std::filesystem::path p(path);
  std::string d = p.parent_path().string();
  return d.empty() ? "." : d;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool HostHasNvidiaDriver() { return ::access("/dev/nvidiactl", F_OK) == 0; }

std::string TemporaryDirectory() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

std::string ResolvePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? std::filesystem::absolute(path).lexically_normal().string() : p.string();
}

bool PathInside(const std::string& path, const std::string& root) {
  std::string r = ResolvePath(root);
  std::string p = ResolvePath(path);
  if (r == "/") return true;
  return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/');
}

int64_t FreeBytes(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return -1;
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory " + dir);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) return Errno("fsync directory " + dir);
  return Status::Ok();
}

Status SyncFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) return Errno("fsync " + path);
  return SyncDirectory(DirName(path));
}

Status AtomicWriteFile(const std::string& path, const std::string& content, int mode,
                       uint32_t reader_uid) {
  // A random name created exclusively: a link or file planted at a predictable temp name is
  // never followed or truncated.
  std::string tmp = path + ".tmp." + RandomToken();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create " + tmp);
  if (mode >= 0 && ::fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    Status s = Errno("chmod " + tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("write " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (reader_uid != kNoReader && reader_uid != ::geteuid()) (void)GrantReadAcl(fd, reader_uid);
  if (::fsync(fd) != 0) {
    Status s = Errno("fsync " + tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  return DurableRename(tmp, path);
}

Status DurableRename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    Status s = Errno("rename " + from + " to " + to);
    ::unlink(from.c_str());
    return s;
  }
  return SyncDirectory(DirName(to));
}

// With mkdir, not std::filesystem, for the reason RemoveTree gives.
Status MakeDirectories(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    const std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0777) == 0 || errno == EEXIST) continue;
    return Errno("create directory " + prefix);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kIo, "create directory " + dir + ": a file of that name is there");
  }
  return Status::Ok();
}

// With nftw, not std::filesystem::remove_all: LibTorch 2.11's libtorch.so (the pip wheel's)
// exports its own std::filesystem symbols, and a process that links it calls remove_all there,
// through a null pointer (seen on the GPU machine: SIGSEGV in remove_all from libtorch.so).
Status RemoveTree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : Errno("remove " + path);
  }
  auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) -> int {
    return ::remove(p) == 0 || errno == ENOENT ? 0 : -1;
  };
  // Depth first (children before their directory), not following symbolic links.
  if (::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return Errno("remove " + path);
  }
  return Status::Ok();
}

}  // namespace framemill
