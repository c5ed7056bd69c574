#include "supervisor/job/kept_work.h"

#include <cerrno>
#include <dirent.h>
#include <vector>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"

namespace framemill {
namespace {

nlohmann::json FileIdentity(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return nullptr;
  return {{"device", static_cast<uint64_t>(st.st_dev)},
          {"inode", static_cast<uint64_t>(st.st_ino)},
          {"size", static_cast<int64_t>(st.st_size)},
          {"mtime_ns", static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec}};
}

}  // namespace

std::string KeptWorkName(const std::string& output) {
  std::string base = BaseName(output);
  constexpr size_t kMaxBase = 200;  // NAME_MAX is 255 on Linux's file systems
  if (base.size() > kMaxBase) {
    char hash[24];
    std::snprintf(hash, sizeof(hash), "-%016zx", std::hash<std::string>()(base));
    base = base.substr(0, kMaxBase) + hash;
  }
  return "." + base + ".framemill";
}

Result<KeptWork> OpenKeptWork(int dir_fd, const std::string& name, bool fresh) {
  if (::mkdirat(dir_fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(StatusCode::kIo, "cannot create " + name + " beside the output: " +
                                       std::strerror(errno));
  }
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  KeptWork kept{UniqueFd(::openat(dir_fd, name.c_str(), flags)), UniqueFd()};
  struct stat st {};
  if (!kept.dir.valid() || ::fstat(kept.dir.get(), &st) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  name + " beside the output is not a directory framemill can use (" +
                      std::strerror(errno) + "); remove it");
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  name + " beside the output belongs to another user or is open to others; "
                         "framemill keeps a run's unfinished work there: remove it");
  }
  // The lock on a descriptor of its own, of the very directory opened above.
  kept.lock.Reset(::openat(kept.dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!kept.lock.valid() || ::flock(kept.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  "another framemill run is writing this output (its work is in " + name +
                      " beside it); wait for it to end, or stop it");
  }
  // A run that ended meanwhile removed it (its last link is gone): nothing of it is ours.
  if (::fstat(kept.dir.get(), &st) != 0 || st.st_nlink == 0) {
    return Status(StatusCode::kOutputInvalid,
                  name + " beside the output was removed by the run that held it; run again");
  }
  if (fresh) {
    const int listed = ::fcntl(kept.dir.get(), F_DUPFD_CLOEXEC, 0);
    DIR* d = listed >= 0 ? ::fdopendir(listed) : nullptr;
    if (d == nullptr) {
      if (listed >= 0) ::close(listed);
      return Status(StatusCode::kIo, "cannot list " + name + ": " + std::strerror(errno));
    }
    std::vector<std::string> entries;
    while (const dirent* e = ::readdir(d)) {
      const std::string entry = e->d_name;
      if (entry != "." && entry != "..") entries.push_back(entry);
    }
    ::closedir(d);
    for (const std::string& entry : entries) {
      FM_RETURN_IF_ERROR(RemoveTreeAt(kept.dir.get(), entry));
    }
  }
  return kept;
}

nlohmann::json KeptWorkIdentity(int input_fd, int model_fd, const std::string& settings) {
  return {{"input", FileIdentity(input_fd)},
          {"model", FileIdentity(model_fd)},
          {"settings", settings}};
}

bool KeepsWork(const Status& s, int64_t segments_done) {
  switch (s.code()) {
    case StatusCode::kInputInvalid:
    case StatusCode::kVerifyFailed:
      return segments_done > 0;
    case StatusCode::kInvalidJob:
    case StatusCode::kInvalidConfig:
    case StatusCode::kInputMissing:
    case StatusCode::kModelInvalid:
    case StatusCode::kOutputInvalid:
    case StatusCode::kPathNotAllowed:
      return false;
    default:
      return true;
  }
}

}  // namespace framemill
