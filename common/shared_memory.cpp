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
#include <mutex>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace framemill {
namespace {

constexpr const char* kShmDir = "/dev/shm";
constexpr const char* kDirPrefix = "framemill-";
constexpr const char* kLegacyPrefix = "framemill.";  // the flat names of protocol <= 5
constexpr const char* kOwnerFile = "owner";
constexpr const char* kScopePrefix = "scope-";
constexpr int kNameTries = 16;
// How deep RemoveTree goes below a directory: a scope is one level down, and a worker may make
// directories in its own scope; what lies deeper is left (the directory then stays).
constexpr int kMaxRemoveDepth = 8;
// A directory with no readable owner record is left alone this long: its creator may be
// between mkdtemp and writing the record.
constexpr time_t kUnownedGraceS = 60;

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

// Reads a small regular file of this uid in `dir_fd` without following links; "" on any doubt.
std::string ReadOwnerRecord(int dir_fd) {
  int fd = ::openat(dir_fd, kOwnerFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  char buf[64] = {};
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      st.st_size < static_cast<off_t>(sizeof(buf))) {
    n = ::read(fd, buf, sizeof(buf) - 1);
  }
  ::close(fd);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool ReadProcFile(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  out->assign(buf, static_cast<size_t>(n));
  return true;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Removes everything in the directory `dir_fd` (not the directory itself), never following a
// link: subdirectories to kMaxRemoveDepth - depth levels. Returns how many files (and links) it
// removed, the owner record aside.
int RemoveTree(int dir_fd, int depth) {
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return 0;
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    ::close(dup);
    return 0;
  }
  ::rewinddir(dir);  // the duplicate shares dir_fd's offset: from the start, whatever it was
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(dir);
  int removed = 0;
  for (const std::string& n : names) {
    struct stat st {};
    if (::fstatat(dir_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      if (::unlinkat(dir_fd, n.c_str(), 0) == 0 && n != kOwnerFile) ++removed;
      continue;
    }
    if (depth >= kMaxRemoveDepth) continue;
    int sub = ::openat(dir_fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) continue;
    removed += RemoveTree(sub, depth + 1);
    ::close(sub);
    ::unlinkat(dir_fd, n.c_str(), AT_REMOVEDIR);
  }
  return removed;
}

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
std::mutex g_dir_mu;
std::weak_ptr<SharedMemory::Directory>* g_dir = new std::weak_ptr<SharedMemory::Directory>();

// posix_fallocate's error `err` for `bytes` of the object at `path`.
Status ReserveFailed(int err, size_t bytes, const std::string& path) {
  return Status(err == ENOSPC ? StatusCode::kNoSpace : StatusCode::kIo,
                "cannot reserve " + std::to_string(bytes >> 20) + " MiB of shared memory for " +
                    path + ": " + std::strerror(err) + " (is /dev/shm large enough?)");
}

// This process's directory, made on first use (and again after the last user let it go).
Result<std::shared_ptr<SharedMemory::Directory>> ProcessDirectory() {
  std::lock_guard<std::mutex> lock(g_dir_mu);
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

std::string ProcessIdentity(int pid) {
  if (pid <= 0) return "";
  std::string stat;
  if (!ReadProcFile("/proc/" + std::to_string(pid) + "/stat", &stat)) return "";
  // Fields after the command name (which may hold spaces and parentheses): the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  const char* p = stat.c_str() + close + 1;
  char state = 0;
  unsigned long long start = 0;
  // Field 3 is the state, field 22 the start time.
  if (std::sscanf(p,
                  " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                  "%*s %llu",
                  &state, &start) != 2) {
    return "";
  }
  if (state == 'Z' || state == 'X') return "";  // dead, not yet reaped
  return std::to_string(pid) + " " + std::to_string(start);
}

namespace {

// The regular files in the directory `dir_fd` (at `path`) and in its scopes, each file once (by
// inode: a file's name in the directory itself before its links in scopes), the owner record
// aside; nothing followed through a link.
void ListObjects(int dir_fd, const std::string& path, std::vector<std::string>* out) {
  std::vector<std::pair<std::string, std::string>> files;  // (path relative to dir_fd, full path)
  std::vector<std::string> scopes;
  auto read_names = [](int fd) {
    std::vector<std::string> names;
    int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR* dir = dup < 0 ? nullptr : ::fdopendir(dup);
    if (dir == nullptr) {
      if (dup >= 0) ::close(dup);
      return names;
    }
    ::rewinddir(dir);
    while (dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(dir);
    return names;
  };
  std::vector<std::pair<dev_t, ino_t>> seen;
  auto add = [&](int fd, const std::string& name, const std::string& full) {
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) return;
    seen.push_back(id);
    out->push_back(full);
  };
  for (const std::string& n : read_names(dir_fd)) {
    if (n == kOwnerFile) continue;
    struct stat st {};
    if (::fstatat(dir_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      scopes.push_back(n);
    } else {
      add(dir_fd, n, path + "/" + n);
    }
  }
  for (const std::string& scope : scopes) {
    int fd = ::openat(dir_fd, scope.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    for (const std::string& n : read_names(fd)) add(fd, n, path + "/" + scope + "/" + n);
    ::close(fd);
  }
}

}  // namespace

std::vector<SharedMemoryDir> ListFramemillDirs() {
  std::vector<SharedMemoryDir> dirs;
  DIR* shm = ::opendir(kShmDir);
  if (shm == nullptr) return dirs;
  while (dirent* e = ::readdir(shm)) {
    if (std::strncmp(e->d_name, kDirPrefix, std::strlen(kDirPrefix)) != 0) continue;
    struct stat st {};
    if (::fstatat(::dirfd(shm), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid()) {
      continue;  // another user's, or not ours to look at
    }
    int fd = ::openat(::dirfd(shm), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    SharedMemoryDir d;
    d.path = std::string(kShmDir) + "/" + e->d_name;
    std::string record = ReadOwnerRecord(fd);
    d.owner_pid = std::atoi(record.c_str());
    // A directory without its owner record yet may be one another supervisor has just made and
    // is about to write its record into (mkdtemp, then the record): a young one counts as live,
    // so that a supervisor starting beside it cannot remove it under it.
    const bool just_made = record.empty() && std::time(nullptr) - st.st_mtime < 60;
    d.live = just_made || (!record.empty() && ProcessIdentity(d.owner_pid) == record);
    ListObjects(fd, d.path, &d.objects);
    ::close(fd);
    dirs.push_back(std::move(d));
  }
  ::closedir(shm);
  return dirs;
}

std::vector<std::string> ListFramemillObjects() {
  std::vector<std::string> all;
  for (const SharedMemoryDir& d : ListFramemillDirs()) {
    all.push_back(d.path);
    all.insert(all.end(), d.objects.begin(), d.objects.end());
  }
  return all;
}

namespace {

// Removes a private directory whose owner is gone, and the files in it, without following any
// link. Returns the number of objects removed.
int RemoveDirectory(const SharedMemoryDir& d) {
  int fd = ::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) {
    ::close(fd);
    return 0;
  }
  if (d.owner_pid == 0 && ::time(nullptr) - st.st_mtime < kUnownedGraceS) {
    ::close(fd);  // perhaps a directory being set up this very moment
    return 0;
  }
  // Everything in it, scopes and what their workers left in them included.
  const int removed = RemoveTree(fd, 0);
  ::close(fd);
  ::rmdir(d.path.c_str());
  return removed;
}

int RemoveLegacyObjects() {
  int removed = 0;
  DIR* shm = ::opendir(kShmDir);
  if (shm == nullptr) return 0;
  while (dirent* e = ::readdir(shm)) {
    if (std::strncmp(e->d_name, kLegacyPrefix, std::strlen(kLegacyPrefix)) != 0) continue;
    const char* p = e->d_name + std::strlen(kLegacyPrefix);
    char* end = nullptr;
    long pid = std::strtol(p, &end, 10);
    if (end == p || *end != '.' || pid <= 0 || pid == ::getpid()) continue;
    struct stat st {};
    if (::fstatat(::dirfd(shm), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid()) {
      continue;
    }
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // alive
    if (::unlinkat(::dirfd(shm), e->d_name, 0) == 0) ++removed;
  }
  ::closedir(shm);
  return removed;
}

}  // namespace

int RemoveStaleObjects() {
  int removed = RemoveLegacyObjects();
  for (const SharedMemoryDir& d : ListFramemillDirs()) {
    if (!d.live) removed += RemoveDirectory(d);
  }
  return removed;
}

}  // namespace framemill
