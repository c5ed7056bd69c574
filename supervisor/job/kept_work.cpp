#include "supervisor/job/kept_work.h"

#include <cerrno>
#include <dirent.h>
#include <vector>
#include <cstring>
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

std::string KeptWorkName(const std::string& output) { return "." + BaseName(output) + ".framemill"; }

Result<UniqueFd> OpenKeptWork(int dir_fd, const std::string& name, bool fresh) {
  if (::mkdirat(dir_fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(StatusCode::kIo, "cannot create " + name + " beside the output: " +
                                       std::strerror(errno));
  }
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  name + " beside the output is not a directory framemill can use (" +
                      std::strerror(errno) + "); remove it");
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  name + " beside the output belongs to another user or is open to others; "
                         "framemill keeps a run's unfinished work there: remove it");
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status(StatusCode::kOutputInvalid,
                  "another framemill run is writing this output (its work is in " + name +
                      " beside it); wait for it to end, or stop it");
  }
  if (fresh) {
    DIR* d = ::fdopendir(::dup(fd.get()));
    if (d == nullptr) return Status(StatusCode::kIo, "cannot list " + name + ": " + std::strerror(errno));
    std::vector<std::string> entries;
    while (const dirent* e = ::readdir(d)) {
      const std::string entry = e->d_name;
      if (entry != "." && entry != "..") entries.push_back(entry);
    }
    ::closedir(d);
    for (const std::string& entry : entries) FM_RETURN_IF_ERROR(RemoveTreeAt(fd.get(), entry));
  }
  return fd;
}

nlohmann::json KeptWorkIdentity(int input_fd, int model_fd, const std::string& settings) {
  return {{"input", FileIdentity(input_fd)},
          {"model", FileIdentity(model_fd)},
          {"settings", settings}};
}

bool KeepsWork(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidJob:
    case StatusCode::kInvalidConfig:
    case StatusCode::kInputMissing:
    case StatusCode::kInputInvalid:
    case StatusCode::kModelInvalid:
    case StatusCode::kOutputInvalid:
    case StatusCode::kPathNotAllowed:
    case StatusCode::kVerifyFailed:
      return false;
    default:
      return true;
  }
}

}  // namespace framemill
