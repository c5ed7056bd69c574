// Shared memory between the supervisor and its workers: files in one private directory per
// supervisor process under /dev/shm, mapped MAP_SHARED read-write, and private subdirectories of
// it ("scopes"), one per worker process:
//
//   /dev/shm/framemill-XXXXXX/        mkdtemp: an unguessable name, mode 0700
//       owner                         "<pid> <start time>": which process made it (see below)
//       arena-<16 hex>                a job's frame arena: bound by no worker
//       scope-<16 hex>/               one worker's scope, mode 0700: what its sandbox binds
//           ctl-<16 hex>              that worker's control object
//           arena-<16 hex>            a second name (a hard link) of the arena of the job it serves
//
// Objects are made with open(O_CREAT|O_EXCL|O_NOFOLLOW), mode 0600. No other user can list,
// read, write or pre-create anything in the directory; a file that exists anywhere else in
// /dev/shm cannot block creation (mkdtemp and the object and scope names retry with fresh random
// names on EEXIST). Workers are given full paths.
//
// Scopes keep workers apart. A worker's sandbox binds the directory of its control object
// (worker/sandbox/sandbox_policy.h), which is its own scope; in it the supervisor puts only that
// worker's control object and a name of the arena of the job it serves (SharedMemoryScope::Link,
// made by the worker pool when it sends a request), so a worker cannot open, map or list another
// job's arena, another worker's control object (of its own job or another), or anything made for a
// job after its own: a retiring worker of the last job never gets a name of the next job's arena.
// Why per worker rather than per job: a spare worker is started, and sandboxed, before the job
// that takes it exists, so a job's arena must be able to reach a directory made earlier; and a
// worker then sees exactly its own control object, as the security model asks.
//
// The directory exists while this process holds at least one object or scope it created, and is
// removed with the last one; a scope is removed, with everything in it (the links, and whatever
// its worker put there), when its last handle and object go. A process killed outright leaves
// them behind; RemoveStaleObjects finds such directories by their owner record (pid and process
// start time, from /proc/<pid>/stat, so a reused pid does not keep them alive), never by the shape
// of a name, never follows a link, and never touches a directory owned by another uid. Memory is
// reserved with posix_fallocate at creation, so a full /dev/shm is an error here rather than a
// SIGBUS later. (A link shares the object's memory: it is freed once every name and mapping is
// gone.)
//
// Thread safety: Create, Open and SharedMemoryScope's methods may be called from any thread; a
// SharedMemory handle is not shared between threads while being moved or destroyed.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace framemill {

class SharedMemoryScope;

class SharedMemory {
 public:
  // Creates a new object of `bytes` (zero-filled) named "<what>-<random>" in this process's
  // private directory (created on first use) and maps it. `what` is a short plain word. Its
  // first `reserved` bytes (all by default) get their pages now, so that a full /dev/shm fails
  // here rather than with SIGBUS at a first touch; the rest must be reserved (Reserve) before
  // anything touches them. Reserving zeroes the pages: on tmpfs about 0.2 s a GB.
  // With a non-empty `scope` the object is made in that scope instead (and keeps it alive).
  static Result<SharedMemory> Create(const std::string& what, size_t bytes,
                                     size_t reserved = SIZE_MAX,
                                     const SharedMemoryScope* scope = nullptr);
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

  // The process's private directory, or a scope of it (internal to shared_memory.cpp).
  struct Directory;

 private:
  void Release();

  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<Directory> dir_;  // set when this handle created the object
};

// A private subdirectory of this process's directory ("scope-<16 hex>", mode 0700): one worker's
// view of the shared memory (see the top of this file). A handle shares ownership: the scope is
// removed, with everything in it, when its last handle and the last object created in it are
// gone (in the process that made it; a forked child removes nothing).
class SharedMemoryScope {
 public:
  // Makes a new scope (and the process's directory, on first use).
  static Result<SharedMemoryScope> Create();

  SharedMemoryScope() = default;  // an empty handle: no scope
  bool empty() const { return dir_ == nullptr; }
  const std::string& path() const;  // "" when empty

  // Gives the object at `object` (a full path of a file in this process's shared memory) a
  // second name in this scope, the same base name, and returns its full path: the same memory,
  // now reachable from this scope. A name there already that is this very object is kept;
  // anything else of that name (put there by the worker) is removed first. kIo on failure.
  Result<std::string> Link(const std::string& object) const;
  // Removes the name `path` (a full path in this scope, as Link returned) from the scope.
  void Unlink(const std::string& path) const;

 private:
  friend class SharedMemory;
  std::shared_ptr<SharedMemory::Directory> dir_;
};

// One private directory found under /dev/shm (of this uid only).
struct SharedMemoryDir {
  std::string path;
  int owner_pid = 0;                 // 0 when the owner record is missing or unreadable
  bool live = false;                 // the owner process still runs (same pid, same start time)
  // Full paths of the files in it and in its scopes, the owner record aside: each object once
  // (an arena's name in the directory itself rather than its links in scopes).
  std::vector<std::string> objects;
};
std::vector<SharedMemoryDir> ListFramemillDirs();

// Removes the private directories (and everything in them) whose owner is no longer running,
// and objects of the earlier flat layout ("/dev/shm/framemill.<pid>.*" of this uid, pid dead).
// Returns how many objects it removed.
int RemoveStaleObjects();

// Full paths of every framemill object of this uid now in /dev/shm: each private directory and
// the objects in it (SharedMemoryDir::objects; for tests and diagnostics).
std::vector<std::string> ListFramemillObjects();

// For tests: replaces the source of the random part of object names (nullptr: getrandom), so
// that a test can make a name collide with an existing file.
void SetSharedMemoryNameSourceForTesting(uint64_t (*source)());

// "<pid> <start time>" of a process from /proc/<pid>/stat; "" when it does not run. The start
// time (clock ticks since boot) tells a process apart from a later one given the same pid.
std::string ProcessIdentity(int pid);

}  // namespace framemill
