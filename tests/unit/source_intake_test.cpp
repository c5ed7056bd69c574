// The source intake: a file outside the roots is refused by name, a FIFO is refused without
// blocking, a good file is opened, bound to the input restrictions and probed, and the rules of a
// job come from the config.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/media/source_intake.h"
#include "supervisor/process/subprocess.h"
#include "skip.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

std::string TempDir(const std::string& name) {
  std::string dir = fs::temp_directory_path().string() + "/framemill-intake-" + name + "-" +
                    std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/root");
  fs::create_directories(dir + "/outside");
  return dir;
}

// A short generated video (ffmpeg's test source), or the test is skipped where ffmpeg cannot
// make one.
void MakeVideo(const std::string& path, int frames) {
  Result<CommandOutput> r = RunAndCapture(
      {"ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-frames:v",
       std::to_string(frames), "-c:v", "mpeg4", "-y", path});
  if (!r.ok() || r->exit_code != 0) unit::SkipTest("ffmpeg cannot make a test video here");
}

SourceRules Rules(const std::string& root) {
  return SourceRules{"ffprobe", InputRoots::Within({root}), PlaylistInputs::kRefuse, nullptr};
}

}  // namespace

TEST_CASE("source intake: a file outside the roots is refused, and the message names it") {
  const std::string d = TempDir("roots");
  const std::string secret = d + "/outside/secret.mp4";
  std::ofstream(secret) << "not for jobs";
  fs::create_symlink(secret, d + "/root/link.mp4");
  for (const std::string& path : {secret, d + "/root/link.mp4"}) {
    INFO(path);
    Result<UniqueFd> fd = OpenInput(path, Rules(d + "/root"), "input");
    REQUIRE_FALSE(fd.ok());
    CHECK(fd.status().code() == StatusCode::kPathNotAllowed);
    CHECK(fd.status().message().find(path) != std::string::npos);
    Result<TakenSource> taken = TakeSource(path, Rules(d + "/root"), /*frame_times=*/false);
    REQUIRE_FALSE(taken.ok());
    CHECK(taken.status().code() == StatusCode::kPathNotAllowed);
  }
  // Anywhere admits it (the file is opened; it is no video, which is the probe's to say).
  CHECK(OpenInput(secret, {"ffprobe", InputRoots::Anywhere(), PlaylistInputs::kRefuse, nullptr},
                  "input")
            .ok());
  fs::remove_all(d);
}

TEST_CASE("source intake: a FIFO is refused without blocking the open") {
  const std::string d = TempDir("fifo");
  const std::string fifo = d + "/root/fifo.mp4";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  Result<TakenSource> taken = TakeSource(fifo, Rules(d + "/root"), /*frame_times=*/false);
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.status().code() == StatusCode::kInputMissing);
  CHECK(taken.status().message().find("not a regular file") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("source intake: a good file is opened, bound to the restrictions and probed") {
  const std::string d = TempDir("good");
  const std::string path = d + "/root/in.mp4";
  MakeVideo(path, 10);
  Result<TakenSource> taken = TakeSource(path, Rules(d + "/root"), /*frame_times=*/true);
  REQUIRE_MESSAGE(taken.ok(), taken.status().ToString());
  CHECK(taken->fd.valid());
  CHECK(taken->source.fd == taken->fd.get());
  CHECK(taken->source.name == path);
  const std::vector<std::string>& r = taken->source.restrictions;
  REQUIRE(r.size() == 4);
  CHECK(r[0] == "-protocol_whitelist");
  CHECK(r[1] == "file,pipe");
  CHECK(r[2] == "-format_whitelist");
  CHECK(("," + r[3] + ",").find(",hls,") == std::string::npos);  // playlists refused
  CHECK(taken->media.video.width == 64);
  CHECK(taken->media.video.height == 48);
  CHECK(taken->media.video.frame_count == 10);
  // Moved, the SourceFile still names the descriptor the TakenSource owns.
  TakenSource moved = std::move(*taken);
  CHECK(moved.source.fd == moved.fd.get());
  Result<MediaInfo> own = ProbeOwnFile("ffprobe", path, /*frame_times=*/false);
  REQUIRE_MESSAGE(own.ok(), own.status().ToString());
  CHECK(own->video.width == 64);
  fs::remove_all(d);
}

TEST_CASE("source intake: a job's rules are the config's ffprobe, input roots and playlist key") {
  Config config;
  config.ffprobe = "/opt/ffprobe";
  config.allowed_input_roots = {"/srv/in"};
  config.allowed_output_roots = {"/srv/out"};
  SourceRules rules = JobSourceRules(config, nullptr);
  CHECK(rules.ffprobe == "/opt/ffprobe");
  CHECK(rules.roots.list() == std::vector<std::string>{"/srv/in"});
  CHECK(rules.playlists == PlaylistInputs::kRefuse);
  config.allow_playlist_inputs = true;
  CHECK(JobSourceRules(config, nullptr).playlists == PlaylistInputs::kAllow);
  CHECK(InputRoots::Anywhere().list().empty());
}
