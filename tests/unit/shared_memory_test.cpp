#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include "common/shared_memory.h"

using framemill::ListFramemillObjects;
using framemill::NewSharedMemoryName;
using framemill::RemoveStaleObjects;
using framemill::SharedMemory;

namespace {
bool Listed(const std::string& name) {
  auto all = ListFramemillObjects();
  return std::find(all.begin(), all.end(), name) != all.end();
}
}  // namespace

TEST_CASE("shared memory: created, opened by name, unlinked by its creator") {
  std::string name = NewSharedMemoryName("unit");
  {
    auto created = SharedMemory::Create(name, 1 << 20);
    REQUIRE(created.ok());
    CHECK(created->size() == (1u << 20));
    std::memcpy(created->data(), "framemill", 10);
    auto opened = SharedMemory::Open(name);
    REQUIRE(opened.ok());
    CHECK(std::strcmp(static_cast<const char*>(opened->data()), "framemill") == 0);
    CHECK(Listed(name));
    CHECK_FALSE(SharedMemory::Create(name, 4096).ok());  // names are never shared by accident
  }
  CHECK_FALSE(Listed(name));
  CHECK_FALSE(SharedMemory::Open(name).ok());
}

TEST_CASE("shared memory: objects of a dead process are removed, live ones kept") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto m = SharedMemory::Create(NewSharedMemoryName("orphan"), 4096);
    std::string name = m.ok() ? m->name() : "";
    (void)!::write(fds[1], name.c_str(), name.size() + 1);
    ::_exit(0);  // no destructors: the object is left behind, as after a SIGKILL
  }
  char buf[256] = {};
  REQUIRE(::read(fds[0], buf, sizeof(buf)) > 0);
  ::waitpid(child, nullptr, 0);
  std::string orphan = buf;
  REQUIRE(Listed(orphan));
  auto mine = SharedMemory::Create(NewSharedMemoryName("live"), 4096);
  REQUIRE(mine.ok());
  CHECK(RemoveStaleObjects() >= 1);
  CHECK_FALSE(Listed(orphan));
  CHECK(Listed(mine->name()));
  ::close(fds[0]);
  ::close(fds[1]);
}
