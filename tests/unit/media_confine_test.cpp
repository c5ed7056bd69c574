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

}  // namespace

TEST_CASE("media confine: a confined program reads its descriptors, not the user's other files") {
  if (::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* VERSION */) < 1) {
    unit::SkipTest("no Landlock on this kernel: framemill-confine cannot confine here");
  }
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
    Result<Launch> launch = ReadOnlyLaunch({"head", fd_path}, {fd});
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
  Result<Launch> launch = ReadOnlyLaunch({"head", fd_path}, {fd});
  REQUIRE(launch.ok());
  CHECK(launch->exe == FindExecutable("head"));
  ::close(fd);
  std::filesystem::remove_all(dir);
}
