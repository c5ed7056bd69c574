#include "common/shared_memory.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/shared_memory_object.hpp>

namespace framemill {
namespace bip = boost::interprocess;

namespace {

constexpr const char* kPrefix = "framemill.";
constexpr const char* kShmDir = "/dev/shm";

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<SharedMemory> SharedMemory::Create(const std::string& name, size_t bytes) {
  SharedMemory m;
  try {
    bip::shared_memory_object obj(bip::create_only, name.c_str(), bip::read_write);
    m.name_ = name;
    m.owner_ = true;  // from here on the destructor unlinks the name
    int fd = obj.get_mapping_handle().handle;
    // Reserve the pages now: a full /dev/shm must fail here, not SIGBUS on first touch.
    int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (err != 0) {
      return Status(StatusCode::kIo, "cannot reserve " + std::to_string(bytes >> 20) +
                                         " MiB of shared memory for " + name + ": " +
                                         std::strerror(err) + " (is /dev/shm large enough?)");
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return Status(StatusCode::kIo, Errno("mmap " + name));
    m.data_ = p;
    m.size_ = bytes;
  } catch (const bip::interprocess_exception& e) {
    return Status(StatusCode::kIo, "cannot create shared memory " + name + ": " + e.what());
  }
  return m;
}

Result<SharedMemory> SharedMemory::Open(const std::string& name) {
  SharedMemory m;
  try {
    bip::shared_memory_object obj(bip::open_only, name.c_str(), bip::read_write);
    bip::offset_t size = 0;
    if (!obj.get_size(size) || size <= 0) {
      return Status(StatusCode::kIo, "shared memory " + name + " has no size");
    }
    void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED,
                     obj.get_mapping_handle().handle, 0);
    if (p == MAP_FAILED) return Status(StatusCode::kIo, Errno("mmap " + name));
    m.name_ = name;
    m.data_ = p;
    m.size_ = static_cast<size_t>(size);
  } catch (const bip::interprocess_exception& e) {
    return Status(StatusCode::kIo, "cannot open shared memory " + name + ": " + e.what());
  }
  return m;
}

SharedMemory::SharedMemory(SharedMemory&& o) noexcept { *this = std::move(o); }

SharedMemory& SharedMemory::operator=(SharedMemory&& o) noexcept {
  if (this != &o) {
    Release();
    name_ = std::move(o.name_);
    data_ = o.data_;
    size_ = o.size_;
    owner_ = o.owner_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.owner_ = false;
  }
  return *this;
}

SharedMemory::~SharedMemory() { Release(); }

void SharedMemory::Release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (owner_) bip::shared_memory_object::remove(name_.c_str());
  data_ = nullptr;
  size_ = 0;
  owner_ = false;
}

std::string NewSharedMemoryName(const std::string& what) {
  static std::atomic<uint64_t> generation{0};
  return std::string(kPrefix) + std::to_string(::getpid()) + "." +
         std::to_string(generation.fetch_add(1)) + "." + what;
}

std::vector<std::string> ListFramemillObjects() {
  std::vector<std::string> names;
  DIR* dir = ::opendir(kShmDir);
  if (dir == nullptr) return names;
  while (dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) == 0) names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  return names;
}

int RemoveStaleObjects() {
  int removed = 0;
  for (const std::string& name : ListFramemillObjects()) {
    const char* p = name.c_str() + std::strlen(kPrefix);
    char* end = nullptr;
    long pid = std::strtol(p, &end, 10);
    if (end == p || *end != '.' || pid <= 0) continue;
    if (pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // alive
    if (bip::shared_memory_object::remove(name.c_str())) ++removed;
  }
  return removed;
}

}  // namespace framemill
