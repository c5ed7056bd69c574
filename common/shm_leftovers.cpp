// What processes that have ended left in /dev/shm (common/shared_memory.h: ListFramemillDirs,
// RemoveStaleObjects): their private directories, found by their owner records, and the objects of
// the earlier flat layout. This process's own directory and objects are shared_memory.cpp's.
#include "common/shared_memory.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/shm_layout.h"

namespace framemill {

using namespace shm_layout;  // NOLINT: the layout both files implement

namespace {

constexpr const char* kLegacyPrefix = "framemill.";  // the flat names of protocol <= 5
// How deep RemoveTree goes below a directory: a scope is one level down, and a worker may make
// directories in its own scope; what lies deeper is left (the directory then stays).
constexpr int kMaxRemoveDepth = 8;
// A directory with no readable owner record is left alone this long: its creator may be
// between mkdtemp and writing the record.
constexpr time_t kUnownedGraceS = 60;

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

int shm_layout::RemoveTree(int dir_fd, int depth) {
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
