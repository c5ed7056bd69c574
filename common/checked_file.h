// Files named once (STYLE habit 11). A job's path is checked against the allowed roots on the
// descriptor it was opened as, never on the name again: the checked descriptor is what the
// supervisor reads and what children get (as /proc/self/fd/N of an inherited descriptor), so a
// symlink swapped after the check is never followed. Files framemill creates are created
// exclusively (O_CREAT | O_EXCL | O_NOFOLLOW) under a random name in a directory held open, and
// renamed into place there.
//
// Every descriptor returned here is O_CLOEXEC; a child sees only those passed to it explicitly
// (see supervisor/process/subprocess.h). Thread-safe (no shared state besides the random source).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace framemill {

// Owns one descriptor; closes it on destruction. Movable, not copyable.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "/proc/self/fd/N": names the open file itself, in this process and in a child that inherits N.
std::string FdPath(int fd);

// The path the kernel holds for an open descriptor (readlink of /proc/self/fd/N), "" if none.
std::string FdRealPath(int fd);

// A random token of 16 hex digits from getrandom(): names nobody can guess in advance.
std::string RandomToken();

// Is the real path `real` at `root` or below it (root resolved, symlinks followed)?
bool RealPathInside(const std::string& real, const std::string& root);

// What a checked open is for; decides the error codes and messages.
enum class CheckedKind { kInput, kModel };

// Opens `path` read-only (symlinks followed: a link that stays inside a root works) and checks
// the opened file: a regular file whose real path lies inside one of `roots` (empty: anywhere).
// Errors: kInputMissing / kModelInvalid (no such file, not a regular file), kPathNotAllowed.
Result<UniqueFd> OpenCheckedFile(CheckedKind kind, const std::string& path,
                                 const std::vector<std::string>& roots);

// Opens directory `dir` and checks that its real path lies inside one of `roots`.
// Errors: kOutputInvalid (no such directory), kPathNotAllowed.
Result<UniqueFd> OpenCheckedDirectory(const std::string& dir,
                                      const std::vector<std::string>& roots);

// Creates "<prefix><random><suffix>" in the directory `dir_fd` with O_CREAT | O_EXCL |
// O_NOFOLLOW, open read-write with `mode` (the umask applies). Returns the file and its name.
struct CreatedFile {
  UniqueFd fd;
  std::string name;  // inside the directory, no '/'
};
Result<CreatedFile> CreateExclusiveAt(int dir_fd, const std::string& prefix,
                                      const std::string& suffix, unsigned mode);

// Creates the directory "<prefix><random>" in `dir_fd`, mode 0700, and opens it (O_NOFOLLOW).
Result<CreatedFile> MakePrivateDirectoryAt(int dir_fd, const std::string& prefix);

// Whether a rename may replace an existing entry at its target.
enum class RenameMode { kReplace, kNoReplace };

// Renames `from` to `to`, both in `dir_fd`, after checking that the name `from` still is the
// file `file_fd` (an entry swapped for a link or another file is refused, never moved into
// place). A link at `to` is replaced itself, never followed; with kNoReplace an existing `to`
// fails the rename (kOutputInvalid). Fsyncs the directory.
Status RenameCheckedAt(int dir_fd, const std::string& from, int file_fd, const std::string& to,
                       RenameMode mode);

// Removes `name` in `dir_fd` and, when it is a directory, everything below it, without following
// any symlink (a link is removed, not its target). Ok when it does not exist.
Status RemoveTreeAt(int dir_fd, const std::string& name);

// Grants `uid` read access to the open file through a POSIX access ACL (the xattr
// system.posix_acl_access, set with fsetxattr): user::, user:<uid>:r--, group::, mask::, other::
// from the file's mode. Errors: kIo (the file system does not support ACLs, or refused).
Status GrantReadAcl(int fd, uint32_t uid);

}  // namespace framemill
