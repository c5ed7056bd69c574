#include "common/shared_memory.h"

#include <algorithm>

#include <cstdint>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mutex.h"
#include "common/shm_layout.h"

namespace framemill {

using namespace shm_layout;  // NOLINT: the layout both files implement

namespace {

constexpr const char* kScopePrefix = "scope-";
constexpr int kNameTries = 16;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// errno's failure of `what`: kNoSpace when /dev/shm is full (a job waits for space then,
// supervisor/job/space_wait.h), else kIo.
Status ShmError(const std::string& what) {
  const bool full = errno == ENOSPC || errno == EDQUOT;
  return Status(full ? StatusCode::kNoSpace : StatusCode::kIo, Errno(what));
}

std::atomic<uint64_t (*)()> g_name_source{nullptr};  // tests only

std::string RandomHex() {
  uint64_t v = 0;
  if (uint64_t(*source)() = g_name_source.load()) {
    v = source();
  } else if (::getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
    // getrandom cannot fail for 8 bytes once the pool is ready; fall back to something unique.
    v = (static_cast<uint64_t>(::getpid()) << 32) ^ static_cast<uint64_t>(::clock());
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

// This process's private directory, or one of its scopes (`parent` set). Shared by every object
// and scope made in it; removed with the last.
struct SharedMemory::Directory {
  std::string path;
  int fd = -1;
  pid_t pid = 0;  // the process that made it (a forked child makes its own)
  std::shared_ptr<Directory> parent;  // a scope's process directory; null for that directory

  ~Directory() {
    if (fd >= 0 && ::getpid() == pid) {
      if (parent != nullptr) {
        // A scope: the links in it, and whatever its worker left there, go with it.
        RemoveTree(fd, 1);
        ::unlinkat(parent->fd, BaseName(path).c_str(), AT_REMOVEDIR);
      } else {
        ::unlinkat(fd, kOwnerFile, 0);
        ::rmdir(path.c_str());
      }
    }
    if (fd >= 0) ::close(fd);
  }

  // A new scope in the process directory `parent`.
  static Result<std::shared_ptr<Directory>> MakeScope(const std::shared_ptr<Directory>& parent);

  static Result<std::shared_ptr<Directory>> Make() {
    std::string tmpl = std::string(kShmDir) + "/" + kDirPrefix + "XXXXXX";
    // mkdtemp: mode 0700, an unguessable name, and a new name on EEXIST.
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return ShmError("cannot create a private directory in /dev/shm");
    }
    auto d = std::make_shared<Directory>();
    d->path = tmpl;
    d->pid = ::getpid();
    d->fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->fd < 0 || ::fchmod(d->fd, 0700) != 0) {
      Status s = ShmError("cannot open " + tmpl);
      if (d->fd < 0) ::rmdir(tmpl.c_str());
      return s;
    }
    int ofd =
        ::openat(d->fd, kOwnerFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    std::string record = ProcessIdentity(::getpid()) + "\n";
    bool written = ofd >= 0 && ::write(ofd, record.data(), record.size()) ==
                                   static_cast<ssize_t>(record.size());
    if (ofd >= 0) ::close(ofd);
    if (!written) return ShmError("cannot write " + tmpl + "/owner");
    return d;
  }
};

namespace {
Mutex g_dir_mu;
std::weak_ptr<SharedMemory::Directory>* const g_dir PT_GUARDED_BY(g_dir_mu) =
    new std::weak_ptr<SharedMemory::Directory>();

// posix_fallocate's error `err` for `bytes` of the object at `path`.
Status ReserveFailed(int err, size_t bytes, const std::string& path) {
  return Status(err == ENOSPC ? StatusCode::kNoSpace : StatusCode::kIo,
                "cannot reserve " + std::to_string(bytes >> 20) + " MiB of shared memory for " +
                    path + ": " + std::strerror(err) + " (is /dev/shm large enough?)");
}

// This process's directory, made on first use (and again after the last user let it go).
Result<std::shared_ptr<SharedMemory::Directory>> ProcessDirectory() {
  MutexLock lock(&g_dir_mu);
  std::shared_ptr<SharedMemory::Directory> dir = g_dir->lock();
  if (dir == nullptr || dir->pid != ::getpid()) {
    Result<std::shared_ptr<SharedMemory::Directory>> made = SharedMemory::Directory::Make();
    if (!made.ok()) return made.status();
    dir = *made;
    *g_dir = dir;
  }
  return dir;
}

}  // namespace

Result<std::shared_ptr<SharedMemory::Directory>> SharedMemory::Directory::MakeScope(
    const std::shared_ptr<Directory>& parent) {
  std::string name;
  bool made = false;
  for (int i = 0; i < kNameTries && !made; ++i) {
    name = kScopePrefix + RandomHex();
    made = ::mkdirat(parent->fd, name.c_str(), 0700) == 0;
    if (!made && errno != EEXIST) break;
  }
  const std::string path = parent->path + "/" + name;
  if (!made) return ShmError("cannot create the shared-memory scope " + path);
  auto d = std::make_shared<Directory>();
  d->path = path;
  d->pid = ::getpid();
  d->fd = ::openat(parent->fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d->fd < 0) {
    Status s = ShmError("cannot open " + path);
    ::unlinkat(parent->fd, name.c_str(), AT_REMOVEDIR);
    return s;
  }
  d->parent = parent;  // from here on the destructor removes it
  // Exactly 0700 whatever the umask.
  if (::fchmod(d->fd, 0700) != 0) return ShmError("chmod " + path);
  return d;
}

Result<SharedMemoryScope> SharedMemoryScope::Create() {
  Result<std::shared_ptr<SharedMemory::Directory>> parent = ProcessDirectory();
  if (!parent.ok()) return parent.status();
  Result<std::shared_ptr<SharedMemory::Directory>> dir =
      SharedMemory::Directory::MakeScope(*parent);
  if (!dir.ok()) return dir.status();
  SharedMemoryScope scope;
  scope.dir_ = std::move(*dir);
  return scope;
}

const std::string& SharedMemoryScope::path() const {
  static const std::string* const kNone = new std::string();
  return dir_ == nullptr ? *kNone : dir_->path;
}

Result<std::string> SharedMemoryScope::Link(const std::string& object) const {
  if (dir_ == nullptr) return Status(StatusCode::kInternal, "no shared-memory scope to link into");
  const std::string name = BaseName(object);
  const std::string path = dir_->path + "/" + name;
  struct stat source {};
  if (::fstatat(AT_FDCWD, object.c_str(), &source, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(source.st_mode)) {
    return ShmError("cannot link " + object + " into " + dir_->path);
  }
  for (int i = 0; i < 2; ++i) {
    // No AT_SYMLINK_FOLLOW: the name given, never what a link there points at.
    if (::linkat(AT_FDCWD, object.c_str(), dir_->fd, name.c_str(), 0) == 0) return path;
    if (errno != EEXIST) break;
    struct stat there {};
    if (::fstatat(dir_->fd, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        there.st_dev == source.st_dev && there.st_ino == source.st_ino) {
      return path;  // linked before
    }
    // Not ours: something the worker made under that name.
    if (S_ISDIR(there.st_mode)) {
      int sub = ::openat(dir_->fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        RemoveTree(sub, 2);
        ::close(sub);
      }
      ::unlinkat(dir_->fd, name.c_str(), AT_REMOVEDIR);
    } else {
      ::unlinkat(dir_->fd, name.c_str(), 0);
    }
    errno = EEXIST;
  }
  return ShmError("cannot link " + object + " into " + dir_->path);
}

void SharedMemoryScope::Unlink(const std::string& path) const {
  if (dir_ == nullptr || path.size() <= dir_->path.size() ||
      path.compare(0, dir_->path.size() + 1, dir_->path + "/") != 0) {
    return;
  }
  const std::string name = path.substr(dir_->path.size() + 1);
  if (name.find('/') == std::string::npos) ::unlinkat(dir_->fd, name.c_str(), 0);
}

Result<SharedMemory> SharedMemory::Create(const std::string& what, size_t bytes, size_t reserved,
                                          const SharedMemoryScope* scope) {
  std::shared_ptr<Directory> dir;
  if (scope != nullptr && !scope->empty()) {
    dir = scope->dir_;
  } else {
    Result<std::shared_ptr<Directory>> made = ProcessDirectory();
    if (!made.ok()) return made.status();
    dir = std::move(*made);
  }
  SharedMemory m;
  int fd = -1;
  std::string name;
  for (int i = 0; i < kNameTries && fd < 0; ++i) {
    name = what + "-" + RandomHex();
    fd = ::openat(dir->fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  const std::string path = dir->path + "/" + name;
  if (fd < 0) return ShmError("cannot create shared memory " + path);
  m.path_ = path;
  m.dir_ = dir;  // from here on the destructor removes the file
  // The mode is exactly 0600 whatever the umask; the directory keeps others out anyway.
  if (::fchmod(fd, 0600) != 0) {
    Status s = ShmError("chmod " + path);
    ::close(fd);
    return s;
  }
  // Reserve the pages now: a full /dev/shm must fail here, not SIGBUS on first touch. The rest
  // (when `reserved` < `bytes`) is only the file's size, until Reserve.
  const size_t now = std::min(bytes, reserved);
  int err = now == 0 ? 0 : ::posix_fallocate(fd, 0, static_cast<off_t>(now));
  if (err == 0 && now < bytes && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) err = errno;
  if (err != 0) {
    ::close(fd);
    return ReserveFailed(err, bytes, path);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return ShmError("mmap " + path);
  m.data_ = p;
  m.size_ = bytes;
  return m;
}

Status SharedMemory::Reserve(size_t offset, size_t bytes) const {
  if (dir_ == nullptr || offset > size_ || bytes > size_ - offset) {
    return Status(StatusCode::kInternal, "reserve outside the shared memory " + path_);
  }
  int fd = ::open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ShmError("cannot open shared memory " + path_);
  const int err = ::posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  ::close(fd);
  if (err != 0) return ReserveFailed(err, bytes, path_);
  return Status::Ok();
}

Result<SharedMemory> SharedMemory::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ShmError("cannot open shared memory " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return Status(StatusCode::kIo, "shared memory " + path + " is not a regular file with a size");
  }
  void* p =
      ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return ShmError("mmap " + path);
  SharedMemory m;
  m.path_ = path;
  m.data_ = p;
  m.size_ = static_cast<size_t>(st.st_size);
  return m;
}

SharedMemory::SharedMemory(SharedMemory&& o) noexcept { *this = std::move(o); }

SharedMemory& SharedMemory::operator=(SharedMemory&& o) noexcept {
  if (this != &o) {
    Release();
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    dir_ = std::move(o.dir_);
    o.data_ = nullptr;
    o.size_ = 0;
    o.dir_.reset();
  }
  return *this;
}

SharedMemory::~SharedMemory() { Release(); }

void SharedMemory::Release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (dir_ != nullptr && ::getpid() == dir_->pid) {
    ::unlinkat(dir_->fd, path_.substr(dir_->path.size() + 1).c_str(), 0);
  }
  dir_.reset();  // the last object of the directory removes it
  data_ = nullptr;
  size_ = 0;
}

void SetSharedMemoryNameSourceForTesting(uint64_t (*source)()) { g_name_source.store(source); }

}  // namespace framemill
