// Bad input fails with a message that names the problem, a non-zero exit, and nothing left
// behind: no output, no partial files, no shared memory, no worker processes.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// Runs the job and checks the common promises of a failure; returns stderr.
std::string ExpectFailure(const std::string& dir, const nlohmann::json& job,
                          const std::string& must_mention) {
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(must_mention) != std::string::npos);
  if (job.contains("output")) {
    std::string out = job["output"];
    CHECK_FALSE(fs::exists(out));
    if (fs::is_directory(fs::path(out).parent_path())) {
      for (const std::string& name : ListDir(fs::path(out).parent_path().string())) {
        CHECK(name.find("framemill") == std::string::npos);
      }
    }
  }
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
  return r.err;
}

nlohmann::json BaseJob(const std::string& dir, const std::string& input) {
  return {{"input", input},
          {"output", dir + "/out/result.mp4"},
          {"model", ModelCopy("identity", dir)},
          {"workers", 2},
          {"chunk_frames", 16},
          {"device", TestDevice()}};
}

std::string Prepare(const std::string& name) {
  std::string dir = ScratchDir("bad_" + name);
  fs::create_directories(dir + "/out");
  return dir;
}

}  // namespace

TEST_CASE("bad input: a missing input file") {
  std::string dir = Prepare("missing");
  std::string err = ExpectFailure(dir, BaseJob(dir, dir + "/no-such.mp4"), "input_missing");
  CHECK(err.find("no-such.mp4") != std::string::npos);
}

TEST_CASE("bad input: a file that is not a video") {
  std::string dir = Prepare("not_video");
  std::ofstream(dir + "/notes.mp4") << "these are meeting notes, not a video\n";
  std::string err = ExpectFailure(dir, BaseJob(dir, dir + "/notes.mp4"), "input_invalid");
  CHECK(err.find("notes.mp4") != std::string::npos);
}

TEST_CASE("bad input: a truncated file whose index is lost (moov at the end)") {
  std::string dir = Prepare("truncated_index");
  // d0.mp4 keeps its index at the end: cut in half, nothing can be read.
  std::string cut = dir + "/cut.mp4";
  Shell("head -c 1400000 '" + TestClip("d0.mp4") + "' > '" + cut + "'");
  ExpectFailure(dir, BaseJob(dir, cut), "input_invalid");
}

TEST_CASE("bad input: a truncated file whose index survives (frames missing)") {
  std::string dir = Prepare("truncated_frames");
  // With the index at the front, the file promises every frame but holds only some of them.
  std::string full = dir + "/faststart.mp4";
  std::string cut = dir + "/cut.mp4";
  RunResult r = Shell("ffmpeg -nostdin -v error -y -i '" + TestClip("d20.mp4") +
                      "' -c copy -movflags +faststart '" + full + "'");
  REQUIRE(r.exit_code == 0);
  Shell("head -c $(( $(stat -c %s '" + full + "') / 2 )) '" + full + "' > '" + cut + "'");
  std::string err = ExpectFailure(dir, BaseJob(dir, cut), "input_invalid");
  CHECK(err.find("cut.mp4") != std::string::npos);
}

TEST_CASE("bad input: a file cut at the end is refused, or rendered as far as it goes with "
          "truncated_input accept") {
  std::string dir = Prepare("truncated_accept");
  // 100 frames with the index at the front, cut after 60% of its bytes: the index announces
  // frames whose data is gone, and the packet cut through gives no picture.
  std::string full = dir + "/faststart.mp4";
  std::string cut = dir + "/cut.mp4";
  RunResult r = Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -f "
                      "lavfi -i sine=frequency=440:sample_rate=48000 -t 4 -c:v libx264 -preset "
                      "veryfast -g 25 -c:a aac -movflags +faststart '" + full + "'");
  REQUIRE(r.exit_code == 0);
  Shell("head -c $(( $(stat -c %s '" + full + "') * 6 / 10 )) '" + full + "' > '" + cut + "'");
  RunResult decoded = Shell("ffprobe -v error -select_streams v:0 -show_entries "
                            "frame=best_effort_timestamp_time -of csv=p=0 '" + cut + "' | grep -c .");
  const int64_t shown = std::stoll(decoded.out);
  REQUIRE(shown > 10);
  REQUIRE(shown < 100);
  // Refused by default, naming what the header announces.
  std::string err = ExpectFailure(dir, BaseJob(dir, cut), "input_invalid");
  CHECK(err.find("truncated: its header announces 100 video frames") != std::string::npos);
  // Accepted: the frames that decode, and what was lost.
  nlohmann::json job = BaseJob(dir, cut);
  job["truncated_input"] = "accept";
  r = RunJob(dir, job);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string out = job["output"];
  CHECK(CountFrames(out) == shown);
  char line[160];
  std::snprintf(line, sizeof(line),
                "framemill: truncated input: %lld of 100 frames announced rendered, %.2f s lost\n",
                static_cast<long long>(shown), (100 - shown) / 25.0);
  CHECK(r.out.find(line) != std::string::npos);
  CHECK(r.out.find("warning: the input is truncated: its header announces 100 video frames") !=
        std::string::npos);
  CHECK(SharedMemoryObjects().empty());
}

TEST_CASE("bad input: a model path that is not a TorchScript file") {
  std::string dir = Prepare("bad_model");
  std::ofstream(dir + "/model.pt") << "not a model";
  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  job["model"] = dir + "/model.pt";
  std::string err = ExpectFailure(dir, job, "model_invalid");
  CHECK(err.find("TorchScript") != std::string::npos);
}

TEST_CASE("bad input: a .pt2 package where it cannot run fails before any frame, saying why") {
  // tests/data/tiny-cuda.pt2 is compiled for CUDA: on the CPU no build runs it. A worker built
  // against a LibTorch without AOTInductor packages (Debian's 1.13) says so; one with them says
  // the package is for another device.
  std::string dir = Prepare("pt2_here");
  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  job["model"] = std::string(FRAMEMILL_SOURCE_DIR) + "/tests/data/tiny-cuda.pt2";
  job["device"] = "cpu";
  std::string err = ExpectFailure(dir, job, "model_invalid");
  CHECK((err.find("without AOTInductor packages") != std::string::npos ||
         err.find("compiled for cuda") != std::string::npos));
}

TEST_CASE("bad input: a model file that does not exist") {
  std::string dir = Prepare("missing_model");
  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  job["model"] = dir + "/absent.pt";
  std::string err = ExpectFailure(dir, job, "model_invalid");
  CHECK(err.find("absent.pt") != std::string::npos);
}

TEST_CASE("bad input: an output directory that does not exist") {
  std::string dir = Prepare("no_outdir");
  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  job["output"] = dir + "/nowhere/result.mp4";
  std::string err = ExpectFailure(dir, job, "output_invalid");
  CHECK(err.find("nowhere") != std::string::npos);
}

TEST_CASE("bad input: an existing output is not overwritten without overwrite") {
  std::string dir = Prepare("exists");
  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  std::ofstream(job["output"].get<std::string>()) << "precious";
  RunResult r = RunJob(dir, job);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("output exists") != std::string::npos);
  std::ifstream in(job["output"].get<std::string>());
  std::string content;
  in >> content;
  CHECK(content == "precious");
}

TEST_CASE("bad input: malformed job JSON and unknown keys are rejected by name") {
  std::string dir = Prepare("bad_json");
  std::ofstream(dir + "/broken.json") << "{\"input\": \"a.mp4\", ";
  RunResult r = Shell(std::string("'") + FRAMEMILL_BIN + "' run '" + dir + "/broken.json'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("malformed JSON") != std::string::npos);

  nlohmann::json job = BaseJob(dir, TestClip("d20.mp4"));
  job["chunk_frame"] = 12;  // a typo
  std::string err = ExpectFailure(dir, job, "invalid_job");
  CHECK(err.find("job.chunk_frame: unknown key") != std::string::npos);
}

TEST_CASE("bad input: frames or a frame count over the config's limits are refused before decoding") {
  std::string dir = Prepare("limits");
  const std::string input = dir + "/in.mp4";
  MakeIndexVideo(input, 48, 320, 240, 25, 0);
  // 320x240 is 76,800 pixels; 48 frames.
  RunResult pixels =
      RunJob(dir, BaseJob(dir, input), {{"max_frame_pixels", 76799}});
  INFO("stderr: " << pixels.err);
  CHECK(pixels.exit_code == 1);
  CHECK(pixels.err.find("input_invalid") != std::string::npos);
  CHECK(pixels.err.find("(76800 pixels) are over the config's max_frame_pixels, 76799") !=
        std::string::npos);
  CHECK(pixels.err.find("worker 0") == std::string::npos);  // no worker was started
  RunResult frames =
      RunJob(dir, BaseJob(dir, input), {{"max_job_frames", 47}});
  INFO("stderr: " << frames.err);
  CHECK(frames.exit_code == 1);
  CHECK(frames.err.find("48 frames are over the config's max_job_frames, 47") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out/result.mp4"));
  for (const std::string& name : ListDir(dir + "/out")) CHECK(name.find("framemill") == std::string::npos);
  // At the limits, the job runs.
  RunResult at = RunJob(dir, BaseJob(dir, input),
                        {{"max_frame_pixels", 76800}, {"max_job_frames", 48}});
  CHECK(at.exit_code == 0);
}
