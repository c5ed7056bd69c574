// Small file-system helpers with the durability rules of the project: state is written to a
// temporary file, fsynced, renamed into place, and the directory fsynced, so a crash leaves
// either the old or the new file, never a torn one.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace framemill {

// Errors are kIo, or kNoSpace when the disk is full.

// Writes `content` to `path` atomically (temp in the same directory under a random name, created
// with O_EXCL | O_NOFOLLOW, fsync, rename, fsync dir): a link at `path` is replaced, not followed.
// The file gets 0644 less the umask, or exactly `mode` when it is given (>= 0). With a
// `reader_uid`, that user may read it too, whatever the umask (an access ACL, GrantReadAcl in
// common/checked_file.h; best effort: on a file system without ACLs the mode stays as it is).
inline constexpr uint32_t kNoReader = UINT32_MAX;
Status AtomicWriteFile(const std::string& path, const std::string& content, int mode = -1,
                       uint32_t reader_uid = kNoReader);

// Writes all of `bytes` to the open descriptor `fd` (short writes and EINTR retried); `what`
// names the file in the error.
Status WriteAllToFd(int fd, const std::string& bytes, const std::string& what);
Status WriteAllToFd(int fd, const void* data, size_t n, const std::string& what);
// Reads exactly `n` bytes from `fd` (short reads and EINTR retried). Ok(false): the stream ended
// before the first byte; an end after it, or an error: kIo naming `what`.
Result<bool> ReadAllFromFd(int fd, void* data, size_t n, const std::string& what);
// fsyncs a file (by path) and its directory.
Status SyncFile(const std::string& path);
Status SyncDirectory(const std::string& dir);

// Renames `from` over `to` and fsyncs the directory of `to`.
Status DurableRename(const std::string& from, const std::string& to);

// Creates `dir` and its parents (mode 0755). Ok if it exists.
Status MakeDirectories(const std::string& dir);

// Removes `path` and everything below it; ok when it does not exist.
Status RemoveTree(const std::string& path);

std::string DirName(const std::string& path);
std::string BaseName(const std::string& path);

// Whether `s` ends with `tail` (a file name's suffix).
bool EndsWith(const std::string& s, const std::string& tail);

bool PathExists(const std::string& path);
// Whether NVIDIA's driver is on this host (/dev/nvidiactl): its GPUs may be used.
bool HostHasNvidiaDriver();
// Where temporary files go: $TMPDIR when set and not empty, else /tmp.
std::string TemporaryDirectory();

// `path` made absolute with symlinks followed as far as it exists (the rest kept as written).
std::string ResolvePath(const std::string& path);
// Does `path` resolve to `root` or below it?
bool PathInside(const std::string& path, const std::string& root);
// Bytes an unprivileged user may still write on the file system of `dir`; -1 if unknown.
int64_t FreeBytes(const std::string& dir);
bool IsDirectory(const std::string& path);

}  // namespace framemill
