// The worker sandbox's pieces (worker/sandbox/landlock.h, seccomp_filter.h, sandbox_policy.h,
// sandbox.h) and the worker_sandbox config key. A sandbox cannot be taken off again, so each
// test that applies one does it in a forked child, which reports what it saw through a pipe.
#include <cstdint>
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <cstddef>
#include <elf.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <netinet/in.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "common/config.h"
#include "tests/unit/in_child.h"
#include "worker/sandbox/elf_runpath.h"
#include "worker/sandbox/landlock.h"
#include "worker/sandbox/sandbox.h"
#include "worker/sandbox/sandbox_policy.h"
#include "worker/sandbox/seccomp_filter.h"

namespace fs = std::filesystem;
using namespace framemill;
using framemill::test::InChild;

namespace {

// "" when `r` failed with `want`, else a description.
std::string Expect(const char* what, long r, int want) {
  if (r == -1 && errno == want) return "";
  return std::string(what) + ": got " + std::to_string(r) + " errno " + std::strerror(errno) +
         ", want " + std::strerror(want) + "; ";
}

std::string ExpectOk(const char* what, long r) {
  if (r >= 0) return "";
  return std::string(what) + ": failed: " + std::strerror(errno) + "; ";
}

// fork(), reaping a child that got through at once (it must not run the rest of the test).
long Fork() {
  pid_t pid = ::fork();
  if (pid == 0) std::_Exit(0);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return pid;
}

void RequireLandlock() {
  if (LandlockAbi() <= 0) {
    // ctest's SKIP_RETURN_CODE: reported as skipped, not passed.
    std::printf("SKIPPED: %s\n", LandlockAbsentReason(LandlockAbi()).c_str());
    std::exit(77);
  }
}

std::string TempDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("framemill-sandbox-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A listening TCP socket on 127.0.0.1; returns its port.
int Listen(int* fd) {
  *fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(*fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(*fd, 4) == 0);
  socklen_t len = sizeof(a);
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

long ConnectTcp(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  long r = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  int e = errno;
  ::close(s);
  errno = e;
  return r;
}

}  // namespace

TEST_CASE("worker_sandbox: parsed once into its enum, unset by default, bad values name the key") {
  for (WorkerSandbox m : {WorkerSandbox::kRequired, WorkerSandbox::kAuto, WorkerSandbox::kOff}) {
    CHECK(ParseWorkerSandbox(Name(m)) == m);
  }
  CHECK_FALSE(ParseWorkerSandbox("yes").has_value());
  auto c = ParseConfig(nlohmann::json::object());
  REQUIRE(c.ok());
  CHECK_FALSE(c->worker_sandbox.has_value());
  c = ParseConfig({{"worker_sandbox", "off"}});
  REQUIRE(c.ok());
  CHECK(c->worker_sandbox == WorkerSandbox::kOff);
  c = ParseConfig({{"worker_sandbox", "strict"}});
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("worker_sandbox") != std::string::npos);
  CHECK_FALSE(ParseConfig({{"worker_sandbox", ""}}).ok());
}

TEST_CASE("sandbox policy: the shared-memory directory of a control object") {
  CHECK(SharedMemoryDirectory("framemill.12.1.ctl") == "/dev/shm");
  CHECK(SharedMemoryDirectory("/framemill.12.1.ctl") == "/dev/shm");
  CHECK(SharedMemoryDirectory("/dev/shm/framemill-x1y2/ctl") == "/dev/shm/framemill-x1y2");
}

TEST_CASE("sandbox policy: rules beneath another rule of the same access are dropped") {
  std::vector<FsRule> rules = {{"/usr/lib/x86_64-linux-gnu", FsAccess::kReadExec, ""},
                               {"/usr/lib", FsAccess::kReadExec, ""},
                               {"/usr/lib", FsAccess::kReadExec, "twice"},
                               {"/usr/library", FsAccess::kReadExec, ""},
                               {"/usr/lib/x", FsAccess::kRead, ""}};
  std::vector<FsRule> kept = WithoutRedundantRules(rules);
  REQUIRE(kept.size() == 3);
  CHECK(kept[0].path == "/usr/lib");
  CHECK(kept[0].why.empty());
  CHECK(kept[1].path == "/usr/library");  // a sibling with a common prefix is not beneath
  CHECK(kept[2].access == FsAccess::kRead);
}

TEST_CASE("sandbox policy: ld.so.conf directories, includes followed") {
  std::string dir = TempDir("ldconf");
  fs::create_directories(dir + "/conf.d");
  WriteText(dir + "/ld.so.conf", "# comment\ninclude conf.d/*.conf\n/opt/top/lib\n");
  WriteText(dir + "/conf.d/a.conf", "/opt/cuda/lib64  # CUDA\n\n");
  WriteText(dir + "/conf.d/b.conf", "/usr/local/nvidia/lib64\n");
  WriteText(dir + "/conf.d/ignored.txt", "/nowhere\n");
  std::vector<std::string> dirs = LdSoConfDirectories(dir + "/ld.so.conf");
  CHECK(dirs ==
        std::vector<std::string>{"/opt/cuda/lib64", "/usr/local/nvidia/lib64", "/opt/top/lib"});
  fs::remove_all(dir);
}

TEST_CASE("sandbox policy: the worker's rules grant no home, no /tmp, no /etc beyond the loader") {
  std::vector<FsRule> rules = WorkerFsRules("/dev/shm/framemill-test/ctl");
  bool shm = false, proc_self = false;
  const fs::path exe = fs::canonical("/proc/self/exe");
  for (const FsRule& r : rules) {
    INFO(r.path);
    CHECK(r.path != "/");
    // The executable and files mapped beside it lie wherever the build tree does (a clone in
    // /tmp or a home directory): those files alone, never a directory there.
    const bool of_the_build =
        r.path == exe.string() || fs::path(r.path).parent_path() == exe.parent_path();
    if (of_the_build) {
      CHECK_FALSE(fs::is_directory(r.path));
    } else {
      CHECK(r.path.rfind("/tmp", 0) != 0);
      CHECK(r.path.rfind("/home", 0) != 0);
      CHECK(r.path.rfind("/root", 0) != 0);
    }
    if (r.path.rfind("/etc", 0) == 0) {
      CHECK((r.path == "/etc/ld.so.cache" || r.path == "/etc/localtime" ||
             r.path.rfind("/usr/share/zoneinfo", 0) == 0));
    }
    // The executable's own directory (here the build tree) is never granted whole.
    CHECK(r.path != fs::current_path().string());
    CHECK(r.path != fs::canonical("/proc/self/exe").parent_path().string());
    if (r.path == "/dev/shm/framemill-test") shm = r.access == FsAccess::kReadWrite;
    if (r.path.rfind("/proc/", 0) == 0 && r.path != "/proc/cpuinfo" && r.path != "/proc/meminfo" &&
        r.path != "/proc/driver/nvidia" && r.path != "/proc/devices" && r.path != "/proc/stat" &&
        r.path != "/proc/sys") {
      // The worker's own /proc/PID (or its main thread's, beneath it): no other process's.
      const std::string self = fs::canonical("/proc/self").string();
      CHECK((r.path == self || r.path.rfind(self + "/task/", 0) == 0));
      proc_self = proc_self || r.path == self;
    }
    if (r.access == FsAccess::kReadWrite) {
      // The worker's own /proc/PID (its thread names) is the only other writable place.
      const std::string self = fs::canonical("/proc/self").string();
      CHECK((r.path == "/dev/shm/framemill-test" || r.path == "/dev/null" || r.path == self ||
             r.path.rfind(self + "/task/", 0) == 0));
    }
  }
  CHECK(shm);
  CHECK(proc_self);
}

TEST_CASE("elf run paths: DT_RUNPATH and DT_RPATH entries, $ORIGIN expanded") {
  // A minimal 64-bit ELF file: one PT_LOAD over the whole file at address 0x1000, a PT_DYNAMIC,
  // a string table with the two paths.
  const char kStrings[] = "\0$ORIGIN/../lib:/opt/cuda/lib64\0/old/${ORIGIN}/rp";
  struct File {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[2];
    Elf64_Dyn dyn[5];
    char str[sizeof(kStrings)];
  } f{};
  std::memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
  f.eh.e_ident[EI_CLASS] = ELFCLASS64;
  f.eh.e_phoff = offsetof(File, ph);
  f.eh.e_phentsize = sizeof(Elf64_Phdr);
  f.eh.e_phnum = 2;
  const uint64_t base = 0x1000;
  f.ph[0].p_type = PT_LOAD;
  f.ph[0].p_vaddr = base;
  f.ph[0].p_filesz = sizeof(File);
  f.ph[1].p_type = PT_DYNAMIC;
  f.ph[1].p_offset = offsetof(File, dyn);
  f.ph[1].p_filesz = sizeof(f.dyn);
  f.dyn[0].d_tag = DT_STRTAB;
  f.dyn[0].d_un.d_ptr = base + offsetof(File, str);
  f.dyn[1].d_tag = DT_STRSZ;
  f.dyn[1].d_un.d_val = sizeof(f.str);
  f.dyn[2].d_tag = DT_RUNPATH;
  f.dyn[2].d_un.d_val = 1;
  f.dyn[3].d_tag = DT_RPATH;
  f.dyn[3].d_un.d_val = 1 + std::strlen(kStrings + 1) + 1;
  f.dyn[4].d_tag = DT_NULL;
  std::memcpy(f.str, kStrings, sizeof(kStrings));
  std::string dir = TempDir("elf");
  {
    std::ofstream out(dir + "/libx.so", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&f), sizeof(f));
  }
  CHECK(ElfRunPaths(dir + "/libx.so") ==
        std::vector<std::string>{dir + "/../lib", "/opt/cuda/lib64", "/old/" + dir + "/rp"});
  WriteText(dir + "/not-elf.so", "#!/bin/sh\n");
  CHECK(ElfRunPaths(dir + "/not-elf.so").empty());
  CHECK(ElfRunPaths(dir + "/missing.so").empty());
  fs::remove_all(dir);
}

TEST_CASE("landlock: reads only where allowed, writes only into existing files, no TCP") {
  RequireLandlock();
  std::string dir = TempDir("landlock");
  fs::create_directories(dir + "/allowed");
  fs::create_directories(dir + "/denied");
  fs::create_directories(dir + "/rw");
  WriteText(dir + "/allowed/a", "a");
  WriteText(dir + "/denied/b", "b");
  WriteText(dir + "/rw/c", "c");
  int listener = -1;
  int port = Listen(&listener);
  std::string result = InChild([&](int) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs");
    Result<LandlockResult> ll = ApplyLandlock({{dir + "/allowed", FsAccess::kRead, "test"},
                                               {dir + "/rw", FsAccess::kReadWrite, "test"},
                                               {dir + "/missing", FsAccess::kRead, "test"}});
    if (!ll.ok()) return ll.status().message();
    std::string r;
    r += ExpectOk("read allowed", ::open((dir + "/allowed/a").c_str(), O_RDONLY));
    r += Expect("read denied", ::open((dir + "/denied/b").c_str(), O_RDONLY), EACCES);
    r += Expect("write read-only", ::open((dir + "/allowed/a").c_str(), O_WRONLY), EACCES);
    r += ExpectOk("write read-write", ::open((dir + "/rw/c").c_str(), O_RDWR));
    r += Expect("create", ::open((dir + "/rw/new").c_str(), O_WRONLY | O_CREAT, 0644), EACCES);
    r += Expect("unlink", ::unlink((dir + "/rw/c").c_str()), EACCES);
    r += Expect("read /etc/hostname", ::open("/etc/hostname", O_RDONLY), EACCES);
    if (ll->abi >= 3) {
      r += Expect("truncate", ::truncate((dir + "/rw/c").c_str(), 0), EACCES);
    }
    if (ll->abi >= 4) r += Expect("tcp connect", ConnectTcp(port), EACCES);
    if (ll->abi >= 6) r += Expect("signal the parent", ::kill(::getppid(), 0), EPERM);
    bool listed = false;
    for (const std::string& line : ll->rules) listed |= line.find("skipped (missing)") == 0;
    if (!listed) r += "missing path not listed as skipped; ";
    return r;
  });
  CHECK(result == "");
  CHECK(ConnectTcp(port) == 0);  // the listener itself was fine
  ::close(listener);
  CHECK(fs::exists(dir + "/rw/c"));
  fs::remove_all(dir);
}

TEST_CASE("landlock: absent from the kernel, with a reason that says so") {
  CHECK(LandlockAbsentReason(-ENOSYS).find("not supported by this kernel (ENOSYS)") !=
        std::string::npos);
}

TEST_CASE("seccomp: no processes, programs, foreign sockets or namespaces, but threads run") {
  std::string result = InChild([](int) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs");
    Status s = InstallSeccompFilter(DefaultSeccompPolicy());
    if (!s.ok()) return s.message();
    std::string r;
    r += Expect("socket AF_INET", ::socket(AF_INET, SOCK_STREAM, 0), EPERM);
    r += Expect("socket AF_INET6", ::socket(AF_INET6, SOCK_DGRAM, 0), EPERM);
    r += Expect("socket AF_NETLINK", ::socket(AF_NETLINK, SOCK_RAW, 0), EPERM);
    r += Expect("socket AF_PACKET", ::socket(AF_PACKET, SOCK_RAW, 0), EPERM);
    r += ExpectOk("socket AF_UNIX", ::socket(AF_UNIX, SOCK_STREAM, 0));
    r += Expect("fork", Fork(), EPERM);
    r += Expect("clone3", ::syscall(SYS_clone3, nullptr, 0), ENOSYS);
    r += Expect("execve", ::execl("/bin/true", "true", static_cast<char*>(nullptr)), EPERM);
    r += Expect("ptrace", ::syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0), EPERM);
    r += Expect("unshare", ::unshare(CLONE_NEWNET), EPERM);
    r += Expect("io_uring_setup", ::syscall(SYS_io_uring_setup, 1, nullptr), EPERM);
    r += Expect("bpf", ::syscall(SYS_bpf, 0, nullptr, 0), EPERM);
    bool ran = false;
    std::thread t([&] { ran = true; });  // clone3 refused, clone with CLONE_THREAD allowed
    t.join();
    if (!ran) r += "thread did not run; ";
    return r;
  });
  CHECK(result == "");
}

TEST_CASE("sandbox: required fails naming Landlock when it is absent, auto reports it missing") {
  std::string dir = TempDir("apply-absent");
  std::string required = InChild([&](int fd) {
    SandboxOptions o;
    o.mode = WorkerSandbox::kRequired;
    o.control = dir + "/ctl";
    o.keep_fds = {fd};
    o.landlock_absent = LandlockAbsentReason(-ENOSYS);  // a kernel without it
    Result<SandboxReport> r = ApplySandbox(o);
    return r.ok() ? std::string("applied: ") + r->Summary() : r.status().message();
  });
  std::string automatic = InChild([&](int fd) {
    SandboxOptions o;
    o.mode = WorkerSandbox::kAuto;
    o.control = dir + "/ctl";
    o.keep_fds = {fd};
    o.landlock_absent = LandlockAbsentReason(-ENOSYS);
    Result<SandboxReport> r = ApplySandbox(o);
    return r.ok() ? r->Summary() : "failed: " + r.status().message();
  });
  CHECK(required.find("worker_sandbox is \"required\"") != std::string::npos);
  CHECK(required.find("landlock: Landlock is not supported by this kernel (ENOSYS)") !=
        std::string::npos);
  INFO(automatic);
  CHECK(automatic.rfind("partial: seccomp, no_new_privs, rlimits", 0) == 0);
  CHECK(automatic.find("missing landlock (Landlock is not supported") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sandbox: the whole sandbox, applied as a worker applies it") {
  RequireLandlock();
  std::string dir = TempDir("apply");
  WriteText(dir + "/ctl", "control");
  WriteText(dir + "/../framemill-sandbox-outside", "outside");
  int stray = ::open("/etc/hostname", O_RDONLY);  // an inherited descriptor: must be closed
  std::string result = InChild([&](int fd) {
    SandboxOptions o;
    o.mode = WorkerSandbox::kRequired;
    o.control = dir + "/ctl";
    o.keep_fds = {fd};
    Result<SandboxReport> rep = ApplySandbox(o);
    if (!rep.ok()) return rep.status().message();
    std::string r;
    std::string summary = rep->Summary();
    if (summary.rfind("landlock abi ", 0) != 0 || summary.find("seccomp") == std::string::npos) {
      r += "summary: " + summary + "; ";
    }
    if (::fcntl(stray, F_GETFD) != -1) r += "inherited descriptor left open; ";
    if (::fcntl(fd, F_GETFD) == -1) r += "kept descriptor closed; ";
    r += ExpectOk("shared memory read-write", ::open((dir + "/ctl").c_str(), O_RDWR));
    // Not there at all in the private root; denied by Landlock where there is none.
    const int hidden = summary.find(", mntns") != std::string::npos ? ENOENT : EACCES;
    r += Expect("outside", ::open((dir + "/../framemill-sandbox-outside").c_str(), O_RDONLY),
                hidden);
    r += Expect("/etc/passwd", ::open("/etc/passwd", O_RDONLY), hidden);
    r += ExpectOk("/proc/self/status", ::open("/proc/self/status", O_RDONLY));
    r += ExpectOk("a library", ::open("/etc/ld.so.cache", O_RDONLY));
    r += Expect("fork", Fork(), EPERM);
    rlimit core{};
    ::getrlimit(RLIMIT_CORE, &core);
    if (core.rlim_max != 0) r += "core dumps still allowed; ";
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) r += "no_new_privs not set; ";
    return r;
  });
  ::close(stray);
  CHECK(result == "");
  fs::remove(dir + "/../framemill-sandbox-outside");
  fs::remove_all(dir);
}

TEST_CASE(
    "sandbox: a CUDA worker without its private root is refused in required, warned in auto") {
  std::string dir = TempDir("apply-cuda-no-mntns");
  auto apply = [&](WorkerSandbox mode) {
    return InChild([&](int fd) {
      SandboxOptions o;
      o.mode = mode;
      o.control = dir + "/ctl";
      o.keep_fds = {fd};
      o.cuda = true;  // no Landlock file rules: the private root is all that confines its files
      o.mount_namespace_absent = "FRAMEMILL_TEST_NO_MOUNT_NS is set";  // the faults worker's words
      Result<SandboxReport> r = ApplySandbox(o);
      return r.ok() ? r->Summary() : "failed: " + r.status().message();
    });
  };
  std::string required = apply(WorkerSandbox::kRequired);
  std::string automatic = apply(WorkerSandbox::kAuto);
  INFO(required);
  CHECK(required.rfind("failed: worker_sandbox is \"required\"", 0) == 0);
  CHECK(required.find("mntns: FRAMEMILL_TEST_NO_MOUNT_NS is set; needed by a CUDA worker") !=
        std::string::npos);
  INFO(automatic);
  CHECK(automatic.rfind("partial: ", 0) == 0);
  CHECK(automatic.find("missing mntns (FRAMEMILL_TEST_NO_MOUNT_NS is set") != std::string::npos);
  fs::remove_all(dir);
}
