// The worker's private root (worker/sandbox/mount_namespace.h): the plan of bind mounts, the links
// kept, and the root itself, entered in a forked child (it cannot be left again) inside a user
// namespace of its own, which reports what it saw through a pipe.
#include <cstdint>
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/in_child.h"
#include "worker/sandbox/mount_namespace.h"

namespace fs = std::filesystem;
using namespace framemill;
using framemill::test::InChild;

namespace {

bool WriteFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// A user namespace of the calling (single-threaded) process's own, ids mapped to themselves.
bool EnterUserNamespace() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWUSER) != 0) return false;
  return WriteFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
         WriteFile("/proc/self/setgroups", "deny") &&
         WriteFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

void RequireUserNamespaces() {
  std::string r = InChild([] {
    return EnterUserNamespace() && ::unshare(CLONE_NEWNS) == 0 ? "" : std::strerror(errno);
  });
  if (!r.empty()) {
    std::printf("SKIPPED: no user and mount namespaces here: %s\n", r.c_str());
    std::exit(77);
  }
}

std::string Expect(const std::string& what, long r, int want) {
  if (r == -1 && errno == want) return "";
  return what + ": got " + std::to_string(r) + " errno " + std::strerror(errno) + ", want " +
         std::strerror(want) + "; ";
}

std::string ExpectOk(const std::string& what, long r) {
  if (r >= 0) return "";
  return what + ": failed: " + std::strerror(errno) + "; ";
}

}  // namespace

TEST_CASE("private root: the plan binds parents first and leaves out what a parent covers") {
  std::vector<FsRule> rules = {
      {"/usr/lib/x", FsAccess::kRead, ""},  // inside /usr/lib, which allows more
      {"/usr/lib", FsAccess::kReadExec, ""},
      {"/dev/shm/a/b", FsAccess::kRead, ""},  // inside a writable directory
      {"/dev/shm/a", FsAccess::kReadWrite, ""},
      {"/sys", FsAccess::kRead, ""},
      {"/sys/x", FsAccess::kReadExec, ""},  // needs exec, which /sys does not give
      {"/dev/nvidia0", FsAccess::kDevice, ""},
      {"/etc/ld.so.cache", FsAccess::kRead, ""},
      {"/etc/ld.so.cache", FsAccess::kReadWrite, ""},  // one path twice: both rights
      {"relative", FsAccess::kRead, ""},
      {"/", FsAccess::kRead, ""},
  };
  std::vector<BindMount> want = {
      {"/dev/nvidia0", true, true}, {"/dev/shm/a", true, false}, {"/etc/ld.so.cache", true, false},
      {"/sys", false, false},       {"/sys/x", false, true},     {"/usr/lib", false, true},
  };
  CHECK(PlanBindMounts(rules) == want);
  // A trailing '/' names the same directory: one bind, without it (the tree is built parents
  // first, and "dir/"'s parent would be "dir" itself).
  CHECK(PlanBindMounts({{"/srv/out/", FsAccess::kReadWrite, ""},
                        {"/srv/out//", FsAccess::kRead, ""}}) ==
        std::vector<BindMount>{{"/srv/out", true, false}});
}

TEST_CASE("private root: the links on the way to a named path are kept, with their targets") {
  fs::path dir =
      fs::temp_directory_path() / ("framemill-mntns-links-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real" / "sub");
  fs::create_directory_symlink("real", dir / "link");
  const std::string canonical = fs::canonical(dir).string();
  // A chain: chain -> (absolute) link -> real, as /usr/local/cuda -> /etc/alternatives/cuda -> ...
  fs::create_directory_symlink(canonical + "/link", dir / "chain");
  std::vector<PathLink> links =
      LinksToKeep({{canonical + "/real/sub", FsAccess::kRead, "", canonical + "/chain/sub"}});
  auto has = [&](const std::string& path, const std::string& target) {
    return std::any_of(links.begin(), links.end(),
                       [&](const PathLink& l) { return l.path == path && l.target == target; });
  };
  CHECK(has(canonical + "/chain", canonical + "/link"));
  CHECK(has(canonical + "/link", "real"));
  // Those directly in "/" too (a merged /usr's /lib), where there are any.
  if (fs::is_symlink("/lib")) CHECK(has("/lib", fs::read_symlink("/lib").string()));
  fs::remove_all(dir);
}

TEST_CASE("private root: only the bound paths are there, read-only unless writable") {
  RequireUserNamespaces();
  fs::path dir = fs::temp_directory_path() / ("framemill-mntns-root-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ro");
  fs::create_directories(dir / "rw");
  std::ofstream((dir / "ro" / "inside.txt").string()) << "inside";
  std::ofstream((dir / "outside.txt").string()) << "outside";
  const std::string d = fs::canonical(dir).string();
  std::string result = InChild([&] {
    if (!EnterUserNamespace()) return std::string("user namespace: ") + std::strerror(errno);
    Result<PrivateRoot> root = EnterPrivateRoot({{d + "/ro", FsAccess::kRead, ""},
                                                 {d + "/rw", FsAccess::kReadWrite, ""},
                                                 {d + "/missing", FsAccess::kRead, ""}});
    if (!root.ok()) return root.status().message();
    std::string r;
    r += ExpectOk("read a bound file", ::open((d + "/ro/inside.txt").c_str(), O_RDONLY));
    r += Expect("write a read-only bind", ::open((d + "/ro/inside.txt").c_str(), O_WRONLY), EROFS);
    r += ExpectOk("create in a writable bind",
                  ::open((d + "/rw/new.txt").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
    r += Expect("a file beside the binds", ::open((d + "/outside.txt").c_str(), O_RDONLY), ENOENT);
    r += Expect("/etc/passwd", ::open("/etc/passwd", O_RDONLY), ENOENT);
    r += Expect("create in the root", ::mkdir("/escape", 0700), EROFS);
    r += ExpectOk("private /tmp", ::open("/tmp/scratch", O_WRONLY | O_CREAT | O_EXCL, 0600));
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr || std::string(cwd) != "/") r += "cwd not /; ";
    return r;
  });
  CHECK(result == "");
  // The writable bind wrote through to the real directory; the private /tmp went nowhere.
  CHECK(fs::exists(dir / "rw" / "new.txt"));
  CHECK_FALSE(fs::exists("/escape"));
  fs::remove_all(dir);
}
