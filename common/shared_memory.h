// Named POSIX shared-memory objects (Boost.Interprocess), mapped read-write. The creator owns the
// name and unlinks it when destroyed; an opener only maps it. Memory is reserved with
// posix_fallocate at creation, so a full /dev/shm is an error here rather than a SIGBUS later.
//
// Names follow "framemill.<supervisor pid>.<generation>.<what>" so that a supervisor can remove
// objects left by a dead one (RemoveStaleObjects).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace framemill {

class SharedMemory {
 public:
  // Creates a new object of `bytes` (zero-filled) and maps it. Fails if the name exists.
  static Result<SharedMemory> Create(const std::string& name, size_t bytes);
  // Maps an existing object in full.
  static Result<SharedMemory> Open(const std::string& name);

  SharedMemory() = default;  // an empty handle: maps nothing, owns nothing
  SharedMemory(SharedMemory&&) noexcept;
  SharedMemory& operator=(SharedMemory&&) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();  // unmaps; unlinks the name when this handle created it

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void Release();

  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;
};

// A fresh name for an object of this process: "framemill.<pid>.<n>.<what>" (n counts up).
std::string NewSharedMemoryName(const std::string& what);

// Removes /dev/shm objects named framemill.<pid>.* whose pid is not a live process, and returns
// how many it removed.
int RemoveStaleObjects();

// Names of the framemill.* objects now in /dev/shm (for tests and diagnostics).
std::vector<std::string> ListFramemillObjects();

}  // namespace framemill
