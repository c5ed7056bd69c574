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
constexpr int kNameTries = 16;
// A directory with no readable owner record is left alone this long: its creator may be
// between mkdtemp and writing the record.
constexpr time_t kUnownedGraceS = 60;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

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

}  // namespace

// This process's private directory. Shared by every object it created; removed with the last.
struct SharedMemory::Directory {
  std::string path;
  int fd = -1;
  pid_t pid = 0;  // the process that made it (a forked child makes its own)

  ~Directory() {
    if (fd >= 0 && ::getpid() == pid) {
      ::unlinkat(fd, kOwnerFile, 0);
      ::rmdir(path.c_str());
    }
    if (fd >= 0) ::close(fd);
  }

  static Result<std::shared_ptr<Directory>> Make() {
    std::string tmpl = std::string(kShmDir) + "/" + kDirPrefix + "XXXXXX";
    // mkdtemp: mode 0700, an unguessable name, and a new name on EEXIST.
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return Status(StatusCode::kIo, Errno("cannot create a private directory in /dev/shm"));
    }
    auto d = std::make_shared<Directory>();
    d->path = tmpl;
    d->pid = ::getpid();
    d->fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->fd < 0 || ::fchmod(d->fd, 0700) != 0) {
      Status s(StatusCode::kIo, Errno("cannot open " + tmpl));
      if (d->fd < 0) ::rmdir(tmpl.c_str());
      return s;
    }
    int ofd =
        ::openat(d->fd, kOwnerFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    std::string record = ProcessIdentity(::getpid()) + "\n";
    bool written = ofd >= 0 && ::write(ofd, record.data(), record.size()) ==
                                   static_cast<ssize_t>(record.size());
    if (ofd >= 0) ::close(ofd);
    if (!written) return Status(StatusCode::kIo, Errno("cannot write " + tmpl + "/owner"));
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

}  // namespace

Result<SharedMemory> SharedMemory::Create(const std::string& what, size_t bytes,
                                          size_t reserved) {
  std::shared_ptr<Directory> dir;
  {
    std::lock_guard<std::mutex> lock(g_dir_mu);
    dir = g_dir->lock();
    if (dir == nullptr || dir->pid != ::getpid()) {
      Result<std::shared_ptr<Directory>> made = Directory::Make();
      if (!made.ok()) return made.status();
      dir = *made;
      *g_dir = dir;
    }
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
  if (fd < 0) return Status(StatusCode::kIo, Errno("cannot create shared memory " + path));
  m.path_ = path;
  m.dir_ = dir;  // from here on the destructor removes the file
  // The mode is exactly 0600 whatever the umask; the directory keeps others out anyway.
  if (::fchmod(fd, 0600) != 0) {
    Status s(StatusCode::kIo, Errno("chmod " + path));
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
  if (p == MAP_FAILED) return Status(StatusCode::kIo, Errno("mmap " + path));
  m.data_ = p;
  m.size_ = bytes;
  return m;
}

Status SharedMemory::Reserve(size_t offset, size_t bytes) const {
  if (dir_ == nullptr || offset > size_ || bytes > size_ - offset) {
    return Status(StatusCode::kInternal, "reserve outside the shared memory " + path_);
  }
  int fd = ::open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kIo, Errno("cannot open shared memory " + path_));
  const int err = ::posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  ::close(fd);
  if (err != 0) return ReserveFailed(err, bytes, path_);
  return Status::Ok();
}

Result<SharedMemory> SharedMemory::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status(StatusCode::kIo, Errno("cannot open shared memory " + path));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return Status(StatusCode::kIo, "shared memory " + path + " is not a regular file with a size");
  }
  void* p =
      ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Status(StatusCode::kIo, Errno("mmap " + path));
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
    if (DIR* inner = ::fdopendir(fd)) {  // takes fd
      while (dirent* f = ::readdir(inner)) {
        std::string n = f->d_name;
        if (n != "." && n != ".." && n != kOwnerFile) d.objects.push_back(d.path + "/" + n);
      }
      ::closedir(inner);
    } else {
      ::close(fd);
    }
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
  int removed = 0;
  for (const std::string& path : d.objects) {
    std::string name = path.substr(d.path.size() + 1);
    if (::unlinkat(fd, name.c_str(), 0) == 0) ++removed;
  }
  ::unlinkat(fd, kOwnerFile, 0);
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
