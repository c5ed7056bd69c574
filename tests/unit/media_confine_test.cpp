// Programs that parse hostile media run under framemill-confine (supervisor/process/subprocess.h
// ConfineMediaPrograms, worker/sandbox/confine_main.cpp): they read the descriptors they are
// given and nothing else of the user's, and write nothing. `cat` stands in for ffprobe here.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "skip.h"
#include "supervisor/process/subprocess.h"

using namespace framemill;

namespace {

// Confines `programs` for one test, and nothing after it.
struct ConfinedFor {
  explicit ConfinedFor(const std::vector<std::string>& programs) {
    ConfineMediaPrograms(FRAMEMILL_CONFINE_BIN, "required", programs);
  }
  ~ConfinedFor() { ConfineMediaPrograms("", "", {}); }
};

std::string TempDir(const std::string& name) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/framemill-" + name +
                          "-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Skips the test unless the kernel has Landlock ABI `abi` or later.
void RequireLandlock(long abi, const std::string& why) {
  if (::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* VERSION */) < abi) {
    unit::SkipTest(why);
  }
}

}  // namespace

TEST_CASE("media confine: a confined program reads its descriptors, not the user's other files") {
  RequireLandlock(1, "no Landlock on this kernel: framemill-confine cannot confine here");
  const std::string dir = TempDir("confine");
  std::ofstream(dir + "/input.txt") << "the input\n";
  std::ofstream(dir + "/secret.txt") << "the secret\n";
  const int fd = ::open((dir + "/input.txt").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const std::string fd_path = "/proc/self/fd/" + std::to_string(fd);
  {
    ConfinedFor confined({"cat"});
    Result<CommandOutput> given = RunAndCapture({"cat", fd_path}, {fd});
    REQUIRE(given.ok());
    CHECK(given->exit_code == 0);
    CHECK(given->out == "the input\n");
    Result<CommandOutput> other = RunAndCapture({"cat", dir + "/secret.txt"});
    REQUIRE(other.ok());
    CHECK(other->exit_code != 0);
    CHECK(other->out.empty());
    CHECK(other->err.find("Permission denied") != std::string::npos);
    // Not a named program: runs as it is.
    Result<CommandOutput> plain = RunAndCapture({"head", "-n1", dir + "/secret.txt"});
    REQUIRE(plain.ok());
    CHECK(plain->out == "the secret\n");
    // Whatever the program, a read-only launch is confined.
    Result<Launch> launch = ConfinedLaunch({"head", fd_path}, {fd});
    REQUIRE(launch.ok());
    CHECK(launch->exe == FRAMEMILL_CONFINE_BIN);
    CHECK(launch->name == FindExecutable("head"));
    CHECK(launch->args == std::vector<std::string>{"--mode", "required", "--read", fd_path, "--",
                                                   FindExecutable("head"), fd_path});
  }
  // Unconfined again.
  Result<CommandOutput> after = RunAndCapture({"cat", dir + "/secret.txt"});
  REQUIRE(after.ok());
  CHECK(after->out == "the secret\n");
  Result<Launch> launch = ConfinedLaunch({"head", fd_path}, {fd});
  REQUIRE(launch.ok());
  CHECK(launch->exe == FindExecutable("head"));
  ::close(fd);
  std::filesystem::remove_all(dir);
}

TEST_CASE("media confine: a descriptor open for writing is rewritten, others only read") {
  RequireLandlock(3, "Landlock ABI 3 (truncate) is not on this kernel");
  const std::string dir = TempDir("confine-write");
  std::ofstream(dir + "/output.txt") << "the old output, longer than the new\n";
  std::ofstream(dir + "/input.txt") << "the input\n";
  const int out = ::open((dir + "/output.txt").c_str(), O_RDWR | O_CLOEXEC);
  const int in = ::open((dir + "/input.txt").c_str(), O_RDONLY | O_CLOEXEC);
  const int at = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(out >= 0);
  REQUIRE(in >= 0);
  REQUIRE(at >= 0);
  auto fd_path = [](int fd) { return "/proc/self/fd/" + std::to_string(fd); };
  {
    ConfinedFor confined({"sh"});
    Result<Launch> launch = MediaLaunch({"sh", "-c", "true"}, {out, in, at});
    REQUIRE(launch.ok());
    CHECK(launch->args == std::vector<std::string>{"--mode", "required", "--write", fd_path(out),
                                                   "--read", fd_path(in), "--read", fd_path(at),
                                                   "--", FindExecutable("sh"), "-c", "true"});
    // The output is rewritten (opened with O_TRUNC), the input is not writable, the directory
    // (readable) takes no new file.
    const std::string script = "echo new > " + fd_path(out) + "; echo x >> " + fd_path(in) +
                               "; cat " + dir + "/input.txt; echo y > " + dir + "/created";
    Result<CommandOutput> r = RunAndCapture({"sh", "-c", script}, {out, in, at});
    REQUIRE(r.ok());
    CHECK(r->out == "the input\n");
    CHECK(r->err.find("Permission denied") != std::string::npos);
    // A hardware encoder is left unconfined (its driver needs device nodes), a software one not.
    Result<Launch> nvenc = MediaLaunch({"sh", "-i", "x", "-c:v", "h264_nvenc", "y"}, {});
    REQUIRE(nvenc.ok());
    CHECK(nvenc->exe == FindExecutable("sh"));
    Result<Launch> x264 = MediaLaunch({"sh", "-i", "x", "-c:v", "libx264", "y"}, {});
    REQUIRE(x264.ok());
    CHECK(x264->exe == FRAMEMILL_CONFINE_BIN);
  }
  std::ifstream output(dir + "/output.txt");
  std::string text((std::istreambuf_iterator<char>(output)), std::istreambuf_iterator<char>());
  CHECK(text == "new\n");
  std::ifstream input(dir + "/input.txt");
  std::string kept((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  CHECK(kept == "the input\n");
  CHECK_FALSE(std::filesystem::exists(dir + "/created"));
  ::close(out);
  ::close(in);
  ::close(at);
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "media confine: --gpu confines by a private root: the system read-only, its folder "
    "writable, nothing else there") {
  const std::string dir = TempDir("confine-gpu");
  std::filesystem::create_directories(dir + "/in");
  std::filesystem::create_directories(dir + "/build");
  std::ofstream(dir + "/in/a.txt") << "the input\n";
  std::ofstream(dir + "/secret.txt") << "the secret\n";
  const std::string script =
      "cat " + dir + "/in/a.txt; echo made > " + dir + "/build/b.txt; cat " + dir +
      "/secret.txt || echo no-secret; echo x > " + dir + "/in/c.txt || echo input-read-only; " +
      "touch /usr/framemill-confine-test || echo usr-read-only; ls /etc/passwd";
  Result<CommandOutput> r =
      RunAndCapture({FRAMEMILL_CONFINE_BIN, "--mode", "required", "--gpu", "--read", dir + "/in",
                     "--write", dir + "/build", "--", "/bin/sh", "-c", script});
  REQUIRE(r.ok());
  if (r->exit_code == 126 && r->err.find("mntns") != std::string::npos) {
    unit::SkipTest("no private root here (user namespaces refused): " + r->err);
  }
  INFO(r->err);
  CHECK(r->exit_code == 0);
  CHECK(r->out == "the input\nno-secret\ninput-read-only\nusr-read-only\n/etc/passwd\n");
  std::ifstream made(dir + "/build/b.txt");
  std::string line;
  CHECK(std::getline(made, line));
  CHECK(line == "made");
  CHECK(!std::filesystem::exists(dir + "/in/c.txt"));
  CHECK(!std::filesystem::exists("/usr/framemill-confine-test"));
  std::filesystem::remove_all(dir);
}
