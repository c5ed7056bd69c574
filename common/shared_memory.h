// Shared memory between the supervisor and its workers: files in one private directory per
// supervisor process under /dev/shm, mapped MAP_SHARED read-write.
//
//   /dev/shm/framemill-XXXXXX/        mkdtemp: an unguessable name, mode 0700
//       owner                         "<pid> <start time>": which process made it (see below)
//       ctl-<16 hex>, arena-<16 hex>  open(O_CREAT|O_EXCL|O_NOFOLLOW), mode 0600
//
// No other user can list, read, write or pre-create anything in the directory; a file that
// exists anywhere else in /dev/shm cannot block creation (mkdtemp and the object names retry
// with fresh random names on EEXIST). Workers are given full paths.
//
// The directory exists while this process holds at least one object it created, and is removed
// with the last one. A process killed outright leaves it behind; RemoveStaleObjects finds such
// directories by their owner record (pid and process start time, from /proc/<pid>/stat, so a
// reused pid does not keep them alive), never by the shape of a name, and never touches a
// directory owned by another uid. Memory is reserved with posix_fallocate at creation, so a full
// /dev/shm is an error here rather than a SIGBUS later.
//
// Thread safety: Create and Open may be called from any thread; a SharedMemory handle is not
// shared between threads while being moved or destroyed.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace framemill {

class SharedMemory {
 public:
  // Creates a new object of `bytes` (zero-filled) named "<what>-<random>" in this process's
  // private directory (created on first use) and maps it. `what` is a short plain word. Its
  // first `reserved` bytes (all by default) get their pages now, so that a full /dev/shm fails
  // here rather than with SIGBUS at a first touch; the rest must be reserved (Reserve) before
  // anything touches them. Reserving zeroes the pages: on tmpfs about 0.2 s a GB.
  static Result<SharedMemory> Create(const std::string& what, size_t bytes,
                                     size_t reserved = SIZE_MAX);
  // Maps an existing object in full, by its full path; refuses a symlink or anything but a
  // regular file.
  static Result<SharedMemory> Open(const std::string& path);

  SharedMemory() = default;  // an empty handle: maps nothing, owns nothing
  SharedMemory(SharedMemory&&) noexcept;
  SharedMemory& operator=(SharedMemory&&) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();  // unmaps; removes the file when this handle created it

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return path_; }  // the full path
  // Gives bytes [offset, offset + bytes) of an object this handle created their pages (a no-op
  // where they have them already). kNoSpace when /dev/shm is full.
  Status Reserve(size_t offset, size_t bytes) const;

  struct Directory;  // the process's private directory (internal to shared_memory.cpp)

 private:
  void Release();

  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<Directory> dir_;  // set when this handle created the object
};

// One private directory found under /dev/shm (of this uid only).
struct SharedMemoryDir {
  std::string path;
  int owner_pid = 0;                 // 0 when the owner record is missing or unreadable
  bool live = false;                 // the owner process still runs (same pid, same start time)
  std::vector<std::string> objects;  // full paths of the files in it, the owner record aside
};
std::vector<SharedMemoryDir> ListFramemillDirs();

// Removes the private directories (and everything in them) whose owner is no longer running,
// and objects of the earlier flat layout ("/dev/shm/framemill.<pid>.*" of this uid, pid dead).
// Returns how many objects it removed.
int RemoveStaleObjects();

// Full paths of every framemill object of this uid now in /dev/shm: each private directory and
// the files in it (for tests and diagnostics).
std::vector<std::string> ListFramemillObjects();

// For tests: replaces the source of the random part of object names (nullptr: getrandom), so
// that a test can make a name collide with an existing file.
void SetSharedMemoryNameSourceForTesting(uint64_t (*source)());

// "<pid> <start time>" of a process from /proc/<pid>/stat; "" when it does not run. The start
// time (clock ticks since boot) tells a process apart from a later one given the same pid.
std::string ProcessIdentity(int pid);

}  // namespace framemill
