// A full disk is a pause, not a loss (config no_space_wait_s, supervisor/job/space_wait.h): a job
// whose output disk is full waits and says so, and finishes frame-exact once space returns; a
// full spool pauses claiming and leaves the job waiting in incoming/. The small disks are tmpfs
// mounts made here (root only; skipped otherwise) and unmounted at the end.
#include <doctest/doctest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/mount.h>
#include <unistd.h>
#include <vector>

#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// A tmpfs of `size` at `path` while it lives.
struct SmallDisk {
  std::string path;
  SmallDisk(const std::string& at, const char* size) : path(at) {
    fs::create_directories(path);
    const std::string options = std::string("size=") + size;
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      SkipTest(std::string("cannot mount a tmpfs here (") + std::strerror(errno) +
               "); the full-disk tests need root");
    }
  }
  ~SmallDisk() { ::umount2(path.c_str(), MNT_DETACH); }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  std::string filler() const { return path + "/filler"; }
  // Writes a file until the disk has no room left.
  void Fill() const {
    int fd = ::open(filler().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    std::vector<char> block(64 * 1024, 'x');
    size_t size = block.size();
    while (size > 0) {
      if (::write(fd, block.data(), size) < 0) {
        REQUIRE(errno == ENOSPC);
        size /= 2;  // the last pages
      }
    }
    ::close(fd);
  }
  void Free() const { fs::remove(filler()); }
};

bool FileSays(const std::string& path, const std::string& text) {
  return ReadText(path).find(text) != std::string::npos;
}

// A metric's own line ("framemill_spool_full 1"), not its help text, which names it too.
bool MetricSays(const std::string& path, const std::string& line) {
  return ("\n" + ReadText(path)).find("\n" + line + "\n") != std::string::npos;
}

// Waits until every thread of `pid` is stopped (SIGSTOP takes effect as each is scheduled).
bool Stopped(int pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& t : fs::directory_iterator(tasks, ec)) {
    const std::string stat = ReadText(t.path().string() + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'T') {
      return false;
    }
  }
  return !ec;
}

}  // namespace

TEST_CASE(
    "disk full: a job whose output disk is full waits, says so in status and metrics, and "
    "finishes frame-exact once space returns") {
  Service s = MakeService("disk_full_output", {{"no_space_wait_s", 300}});
  s.config["metrics_textfile"] = s.dir + "/metrics.prom";
  std::ofstream(s.config_path) << s.config.dump(2);
  SmallDisk disk(s.dir + "/out-disk", "8m");
  const std::string input = s.dir + "/index.mp4";
  MakeIndexVideo(input, 120, 160, 128, 25, 440);
  disk.Fill();
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  const std::string model = ModelCopy("identity", s.dir);
  Drop(s, "full",
       nlohmann::json{{"input", input}, {"output", disk.path + "/out.mp4"}, {"model", model}}
           .dump());
  const std::string progress = s.spool + "/active/full/progress.json";
  REQUIRE(WaitUntil([&] { return FileSays(progress, "\"waiting\""); }, 60));
  CHECK(ReadJson(progress)["waiting"].get<std::string>().find("no_space") == 0);
  RunResult status = Cli(s, "status full");
  INFO(status.out);
  CHECK(status.out.find("waiting for disk space") != std::string::npos);
  CHECK(WaitUntil(
      [&] { return MetricSays(s.dir + "/metrics.prom", "framemill_jobs_waiting_for_space 1"); },
      10));
  CHECK(fs::exists(s.spool + "/active/full"));  // not failed

  disk.Free();
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/full/result.json"); }, 120));
  std::vector<int> indices = FrameIndices(disk.path + "/out.mp4", 160, 128);
  CHECK(indices.size() == 120);
  CHECK(OutOfPlace(indices, 120) == 0);
  CHECK(FirstStream(Probe(disk.path + "/out.mp4"), "audio").is_object());
  CHECK(WaitUntil(
      [&] { return MetricSays(s.dir + "/metrics.prom", "framemill_jobs_waiting_for_space 0"); },
      10));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "disk full: a full spool pauses claiming, the job stays in incoming/, and it runs once space "
    "returns") {
  Service s = MakeService("disk_full_spool");
  s.config["metrics_textfile"] = s.dir + "/metrics.prom";
  std::ofstream(s.config_path) << s.config.dump(2);
  SmallDisk disk(s.spool, "4m");
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.dir + "/metrics.prom"); }, 30));
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 30);
  // Frozen while the job file arrives and the disk fills, so that the claim meets a full disk.
  REQUIRE(::kill(serve.pid, SIGSTOP) == 0);
  REQUIRE(WaitUntil([&] { return Stopped(serve.pid); }, 10));
  RunResult submit =
      Cli(s, "submit '" + input + "' --model '" + model + "' --output '" + s.dir + "/out.mp4'");
  INFO(submit.err);
  REQUIRE(submit.exit_code == 0);
  const std::string id = submit.out.substr(0, submit.out.find('\n'));
  disk.Fill();
  REQUIRE(::kill(serve.pid, SIGCONT) == 0);
  CHECK(
      WaitUntil([&] { return MetricSays(s.dir + "/metrics.prom", "framemill_spool_full 1"); }, 30));
  CHECK(fs::exists(s.spool + "/incoming/" + id + ".json"));  // neither claimed nor set aside
  CHECK(ListDir(s.spool + "/active").empty());
  CHECK(ListDir(s.spool + "/failed").empty());
  disk.Free();
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/" + id + "/result.json"); }, 60));
  CHECK(CountFrames(s.dir + "/out.mp4") == 30);
  CHECK(
      WaitUntil([&] { return MetricSays(s.dir + "/metrics.prom", "framemill_spool_full 0"); }, 30));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}
