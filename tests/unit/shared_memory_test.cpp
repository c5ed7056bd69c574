#include <cstdint>
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "skip.h"

using namespace framemill;

namespace {

bool Listed(const std::string& path) {
  auto all = ListFramemillObjects();
  return std::find(all.begin(), all.end(), path) != all.end();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// Runs `fn` in a child process with uid and gid 4242 (another local user); returns its exit code.
template <typename Fn>
int AsOtherUser(Fn fn) {
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(4242, 4242, 4242) != 0 ||
        ::setresuid(4242, 4242, 4242) != 0) {
      ::_exit(99);
    }
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The names in a directory, "." and ".." aside.
std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  return names;
}

uint64_t g_fixed_names[] = {0xabc, 0xabc, 0xdef};
int g_next_name = 0;
uint64_t FixedNames() { return g_fixed_names[g_next_name++ % 3]; }

}  // namespace

TEST_CASE("shared memory: created private, opened by path, removed with its directory") {
  std::string path, dir;
  {
    auto created = SharedMemory::Create("unit", 1 << 20);
    REQUIRE(created.ok());
    path = created->name();
    dir = DirName(path);
    CHECK(dir.rfind("/dev/shm/framemill-", 0) == 0);
    CHECK(ModeOf(dir) == 0700);
    CHECK(ModeOf(path) == 0600);
    CHECK(created->size() == (1u << 20));
    std::memcpy(created->data(), "framemill", 10);
    auto opened = SharedMemory::Open(path);
    REQUIRE(opened.ok());
    CHECK(std::strcmp(static_cast<const char*>(opened->data()), "framemill") == 0);
    CHECK(Listed(path));
    CHECK(Listed(dir));
    auto second = SharedMemory::Create("unit", 4096);
    REQUIRE(second.ok());
    CHECK(second->name() != path);
    CHECK(DirName(second->name()) == dir);  // one directory per process
  }
  CHECK_FALSE(Listed(path));
  CHECK_FALSE(PathExists(dir));  // the last object took the directory with it
  CHECK_FALSE(SharedMemory::Open(path).ok());
}

TEST_CASE("shared memory: Open refuses a symlink") {
  auto created = SharedMemory::Create("unit", 4096);
  REQUIRE(created.ok());
  std::string link = DirName(created->name()) + "/link";
  REQUIRE(::symlink(created->name().c_str(), link.c_str()) == 0);
  CHECK_FALSE(SharedMemory::Open(link).ok());
  ::unlink(link.c_str());
}

TEST_CASE("shared memory: a name that exists makes creation retry with another, never fail") {
  SetSharedMemoryNameSourceForTesting(&FixedNames);
  g_next_name = 0;
  auto first = SharedMemory::Create("clash", 4096);   // clash-...abc
  auto second = SharedMemory::Create("clash", 4096);  // ...abc exists: retried as ...def
  SetSharedMemoryNameSourceForTesting(nullptr);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->name() != second->name());
  CHECK(second->name().find("def") != std::string::npos);
}

TEST_CASE("shared memory: another local user can neither read nor enter the directory") {
  if (::geteuid() != 0) framemill::unit::SkipTest("needs root, to act as another user");
  auto m = SharedMemory::Create("secret", 4096);
  REQUIRE(m.ok());
  std::memcpy(m->data(), "frame", 5);
  const std::string path = m->name(), dir = DirName(path);
  // Even with the file made world-readable, the 0700 directory keeps it out of reach.
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  CHECK(AsOtherUser(
            [&] { return ::open(path.c_str(), O_RDONLY) < 0 && errno == EACCES ? 0 : 1; }) == 0);
  CHECK(AsOtherUser([&] { return ::opendir(dir.c_str()) == nullptr ? 0 : 1; }) == 0);
  CHECK(AsOtherUser([&] {
          int fd = ::open((dir + "/planted").c_str(), O_WRONLY | O_CREAT, 0644);
          return fd < 0 ? 0 : 1;
        }) == 0);
  CHECK(AsOtherUser([&] { return SharedMemory::Open(path).ok() ? 1 : 0; }) == 0);
}

TEST_CASE("shared memory: directories of a dead process are removed, live and foreign ones kept") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto m = SharedMemory::Create("orphan", 4096);
    std::string name = m.ok() ? m->name() : "";
    (void)!::write(fds[1], name.c_str(), name.size() + 1);
    ::_exit(0);  // no destructors: the object is left behind, as after a SIGKILL
  }
  char buf[256] = {};
  REQUIRE(::read(fds[0], buf, sizeof(buf)) > 0);
  ::waitpid(child, nullptr, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  const std::string orphan = buf;
  REQUIRE(Listed(orphan));
  auto mine = SharedMemory::Create("live", 4096);
  REQUIRE(mine.ok());
  CHECK(DirName(orphan) != DirName(mine->name()));  // a forked child makes its own

  // A directory whose owner record names a live pid (ours) with another start time: the pid
  // was reused, the owner is gone.
  char reused[] = "/dev/shm/framemill-XXXXXX";
  REQUIRE(::mkdtemp(reused) != nullptr);
  std::ofstream(std::string(reused) + "/owner") << ::getpid() << " 1\n";
  std::ofstream(std::string(reused) + "/arena-0") << "x";

  CHECK(RemoveStaleObjects() >= 2);
  CHECK_FALSE(Listed(orphan));
  CHECK_FALSE(PathExists(DirName(orphan)));
  CHECK_FALSE(PathExists(reused));
  CHECK(Listed(mine->name()));
}

TEST_CASE("shared memory: a directory with no owner record yet is kept while young") {
  // Another supervisor between its mkdtemp and its owner record: not removed under it.
  char young[] = "/dev/shm/framemill-XXXXXX";
  REQUIRE(::mkdtemp(young) != nullptr);
  std::ofstream(std::string(young) + "/arena-0") << "x";
  (void)RemoveStaleObjects();
  CHECK(PathExists(std::string(young) + "/arena-0"));
  // The same an hour later: left by a supervisor that died before writing it.
  struct timespec old[2] = {{1, 0}, {1, 0}};
  REQUIRE(::utimensat(AT_FDCWD, young, old, 0) == 0);
  (void)RemoveStaleObjects();
  CHECK_FALSE(PathExists(young));
}

TEST_CASE("shared memory: another user's directory is never touched") {
  if (::geteuid() != 0) framemill::unit::SkipTest("needs root, to make another user's directory");
  char foreign[] = "/dev/shm/framemill-XXXXXX";
  REQUIRE(::mkdtemp(foreign) != nullptr);
  const std::string file = std::string(foreign) + "/arena-0";
  std::ofstream(file) << "x";
  REQUIRE(::chown(file.c_str(), 4242, 4242) == 0);
  REQUIRE(::chown(foreign, 4242, 4242) == 0);  // no owner record at all, and old: still kept
  struct timespec old[2] = {{1, 0}, {1, 0}};
  REQUIRE(::utimensat(AT_FDCWD, foreign, old, 0) == 0);
  (void)RemoveStaleObjects();
  CHECK(PathExists(file));
  CHECK_FALSE(Listed(foreign));  // not ours to list either
  ::unlink(file.c_str());
  ::rmdir(foreign);
}

TEST_CASE("shared memory: two scopes, and an object in one cannot be reached from the other") {
  auto a = SharedMemoryScope::Create();
  auto b = SharedMemoryScope::Create();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const std::string process_dir = DirName(a->path());
  CHECK(process_dir.rfind("/dev/shm/framemill-", 0) == 0);
  CHECK(DirName(b->path()) == process_dir);  // both below this process's directory
  CHECK(a->path() != b->path());
  CHECK(ModeOf(a->path()) == 0700);
  CHECK(ModeOf(b->path()) == 0700);

  auto ctl = SharedMemory::Create("ctl", 4096, SIZE_MAX, &*a);
  REQUIRE(ctl.ok());
  CHECK(DirName(ctl->name()) == a->path());
  CHECK(ModeOf(ctl->name()) == 0600);
  CHECK(Listed(ctl->name()));
  // From b, by the same base name: not there. And nothing of a's is listed in b.
  const std::string in_b = b->path() + "/" + ctl->name().substr(a->path().size() + 1);
  errno = 0;
  CHECK(::open(in_b.c_str(), O_RDONLY) < 0);
  CHECK(errno == ENOENT);
  CHECK_FALSE(SharedMemory::Open(in_b).ok());
  CHECK(ListDir(b->path()).empty());
  // An object made without a scope is in the process's directory: in neither scope.
  auto arena = SharedMemory::Create("arena", 8192);
  REQUIRE(arena.ok());
  CHECK(DirName(arena->name()) == process_dir);
  CHECK(ListDir(a->path()).size() == 1);
  CHECK(ListDir(b->path()).empty());
}

TEST_CASE("shared memory: a link gives a scope the same object, and the scope goes with its links") {
  auto arena = SharedMemory::Create("arena", 8192);
  REQUIRE(arena.ok());
  std::string scope_path, view;
  {
    auto scope = SharedMemoryScope::Create();
    REQUIRE(scope.ok());
    scope_path = scope->path();
    auto linked = scope->Link(arena->name());
    REQUIRE(linked.ok());
    view = *linked;
    CHECK(DirName(view) == scope_path);
    auto again = scope->Link(arena->name());
    CHECK((again.ok() && *again == view));  // again: the same name, kept
    auto opened = SharedMemory::Open(view);
    REQUIRE(opened.ok());
    std::memcpy(opened->data(), "frame", 6);  // written through the scope's name ...
    CHECK(std::strcmp(static_cast<const char*>(arena->data()), "frame") == 0);  // ... seen here
    // Listed once, by its own name.
    auto all = ListFramemillObjects();
    CHECK(std::count(all.begin(), all.end(), arena->name()) == 1);
    CHECK(std::count(all.begin(), all.end(), view) == 0);
    scope->Unlink(view);
    CHECK_FALSE(PathExists(view));
    REQUIRE(scope->Link(arena->name()).ok());
    // What a worker may leave in its scope goes with it: a file, a directory, a link out.
    std::ofstream(scope_path + "/left") << "x";
    REQUIRE(::mkdir((scope_path + "/dir").c_str(), 0700) == 0);
    std::ofstream(scope_path + "/dir/inner") << "x";
    REQUIRE(::symlink(arena->name().c_str(), (scope_path + "/out").c_str()) == 0);
  }
  CHECK_FALSE(PathExists(scope_path));
  CHECK(PathExists(arena->name()));  // the object itself stays with its owner
  CHECK(std::strcmp(static_cast<const char*>(arena->data()), "frame") == 0);
}

TEST_CASE("shared memory: a link replaces whatever else a worker put under that name") {
  auto arena = SharedMemory::Create("arena", 4096);
  auto scope = SharedMemoryScope::Create();
  REQUIRE(arena.ok());
  REQUIRE(scope.ok());
  const std::string planted =
      scope->path() + "/" + arena->name().substr(arena->name().rfind('/') + 1);
  std::ofstream(planted) << "not the arena";
  auto view = scope->Link(arena->name());
  REQUIRE(view.ok());
  CHECK(*view == planted);
  struct stat a {}, v {};
  REQUIRE(::stat(arena->name().c_str(), &a) == 0);
  REQUIRE(::lstat(view->c_str(), &v) == 0);
  CHECK(a.st_ino == v.st_ino);
}

TEST_CASE("shared memory: a dead process's scopes are removed with its directory") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto scope = SharedMemoryScope::Create();
    auto arena = SharedMemory::Create("arena", 4096);
    auto ctl = scope.ok() ? SharedMemory::Create("ctl", 4096, SIZE_MAX, &*scope)
                          : Result<SharedMemory>(Status(StatusCode::kIo, "no scope"));
    if (ctl.ok() && arena.ok()) (void)scope->Link(arena->name());
    std::string name = ctl.ok() ? ctl->name() : "";
    (void)!::write(fds[1], name.c_str(), name.size() + 1);
    ::_exit(0);  // no destructors: left behind, as after a SIGKILL
  }
  char buf[256] = {};
  REQUIRE(::read(fds[0], buf, sizeof(buf)) > 0);
  ::waitpid(child, nullptr, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  const std::string orphan = buf;
  REQUIRE_FALSE(orphan.empty());
  CHECK(Listed(orphan));
  CHECK(RemoveStaleObjects() >= 2);
  CHECK_FALSE(PathExists(DirName(orphan)));
  CHECK_FALSE(PathExists(DirName(DirName(orphan))));
}

TEST_CASE("shared memory: process identities tell a live process from a reused pid") {
  std::string me = ProcessIdentity(::getpid());
  REQUIRE_FALSE(me.empty());
  CHECK(me.rfind(std::to_string(::getpid()) + " ", 0) == 0);
  CHECK(ProcessIdentity(::getpid()) == me);  // stable
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  CHECK(ProcessIdentity(child).empty());  // gone
}

TEST_CASE("shared memory: pages reserved at creation only as asked, the rest by Reserve") {
  // tmpfs gives a file its blocks when they are reserved (posix_fallocate) or first touched.
  auto blocks = [](const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
  };
  const size_t mib = 1 << 20;
  auto all = framemill::SharedMemory::Create("test", 8 * mib);
  REQUIRE(all.ok());
  CHECK(blocks(all->name()) >= 8 * mib);
  auto part = framemill::SharedMemory::Create("test", 8 * mib, 2 * mib);
  REQUIRE(part.ok());
  CHECK(part->size() == 8 * mib);  // mapped whole
  CHECK(blocks(part->name()) >= 2 * mib);
  CHECK(blocks(part->name()) < 3 * mib);
  REQUIRE(part->Reserve(4 * mib, 2 * mib).ok());
  CHECK(blocks(part->name()) >= 4 * mib);
  CHECK(blocks(part->name()) < 5 * mib);
  REQUIRE(part->Reserve(4 * mib, 2 * mib).ok());  // again: nothing more
  CHECK(blocks(part->name()) < 5 * mib);
  CHECK(part->Reserve(7 * mib, 2 * mib).code() == framemill::StatusCode::kInternal);  // past its end
  framemill::SharedMemory empty;
  CHECK_FALSE(empty.Reserve(0, 1).ok());
}

TEST_CASE("shared memory: an arena made with slot 0 alone reserves the rest slot by slot") {
  framemill::ArenaGeometry shape;
  shape.chunk_frames = 4;
  shape.in_width = shape.out_width = 64;
  shape.in_height = shape.out_height = 64;
  shape.in_format = shape.out_format = framemill::FrameFormat::kRgb24;
  framemill::ArenaDemand demand;
  demand.workers = 1;
  demand.encoders = 1;
  demand.chunks_per_segment = 1;
  demand.chunks = 8;
  demand.arena_mb = 4096;
  auto g = framemill::SizeArena(shape, demand);
  REQUIRE(g.ok());
  REQUIRE(g->slot_count >= 2);
  auto arena = framemill::CreateFrameArena(*g, /*all_slots=*/false);
  REQUIRE(arena.ok());
  struct stat st {};
  REQUIRE(::stat(arena->name().c_str(), &st) == 0);
  const auto [offset1, bytes1] = framemill::ArenaSlotRange(*g, 1);
  CHECK(offset1 == g->data_offset + g->slot_bytes);
  CHECK(bytes1 == g->slot_bytes);
  // Header and slot 0 only (rounded up to pages).
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 < offset1 + 4096);
  REQUIRE(arena->Reserve(offset1, bytes1).ok());
  REQUIRE(::stat(arena->name().c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 >= offset1 + bytes1);
}
