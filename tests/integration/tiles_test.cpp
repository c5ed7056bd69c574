// The job key `tile` and the worker's out-of-memory fallbacks (worker/model/tiled_model.h), end to
// end: the real framemill and its workers on a real clip (d0.mp4 of the shared test data, 512x512, 78 frames).
// The out-of-memory errors come from the test fault FRAMEMILL_TEST_FAULT=oom_over:MB (in the tests'
// worker, tests/faults/), which raises the error type CUDA raises, so the fallbacks run as they
// would on a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "fault_harness.h"
#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kSide = 512;  // d0.mp4 is 512x512
constexpr int kClipFrames = 78;

// The largest difference of any value between two outputs' decoded frames (rgb24), and whether
// they have the same number of frames.
int WorstValueDifference(const std::string& a, const std::string& b) {
  std::vector<std::vector<uint8_t>> first;
  DecodeFrames(a, kSide, kSide, [&](const uint8_t* rgb) {
    first.emplace_back(rgb, rgb + static_cast<size_t>(kSide) * kSide * 3);
  });
  int worst = 0;
  size_t i = 0;
  int64_t n = DecodeFrames(b, kSide, kSide, [&](const uint8_t* rgb) {
    if (i >= first.size()) return;
    for (size_t k = 0; k < first[i].size(); ++k) {
      worst = std::max(worst, std::abs(static_cast<int>(first[i][k]) - rgb[k]));
    }
    ++i;
  });
  REQUIRE(n == static_cast<int64_t>(first.size()));
  return worst;
}

}  // namespace

TEST_CASE("tiles: a job in tiles writes the frames of the same job on whole frames") {
  const std::string dir = ScratchDir("tiles_equal");
  const std::string model = ModelPath("sharpen");
  const std::string clip = TestClip("d0.mp4");
  RunResult whole = RunJob(dir, LosslessJob(clip, dir + "/whole.mp4", model));
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);
  nlohmann::json tiled_job = LosslessJob(clip, dir + "/tiled.mp4", model);
  // 128-pixel tiles that do not divide 512 evenly (step 112), overlap 8 >= sharpen's 1 pixel.
  tiled_job["tile"] = {{"size", 128}, {"overlap", 8}};
  RunResult tiled = RunJob(dir, tiled_job);
  REQUIRE_MESSAGE(tiled.exit_code == 0, tiled.err);
  CHECK(CountFrames(dir + "/tiled.mp4") == kClipFrames);
  // Equal to float rounding (tiled_model.h): at most one level of 255 in a value.
  CHECK(WorstValueDifference(dir + "/whole.mp4", dir + "/tiled.mp4") <= 1);
  CHECK(tiled.out.find("ran out of memory") == std::string::npos);
}

TEST_CASE("tiles: out of memory halves the batch, then tiles, and the job finishes and says so") {
  Service s = MakeService("tiles_oom", WithFaultWorker());
  const std::string model = ModelCopy("sharpen", s.dir);
  fs::create_directories(s.dir + "/out");
  // A 512x512 frame is 3 MiB of floats: calls over 1 MiB run out of memory.
  BackgroundJob serve = Serve(s, {{"FRAMEMILL_TEST_FAULT", "oom_over:1"}});
  KillOnExit guard_serve{serve};
  nlohmann::json job = LosslessJob(TestClip("d0.mp4"), s.dir + "/out/oom.mp4", model);
  job["tile"] = "auto";
  Drop(s, "oom", job.dump());
  const std::string result_path = s.spool + "/done/oom/result.json";
  REQUIRE(WaitUntil([&] { return fs::exists(result_path); }, 300));
  nlohmann::json r = ReadJson(result_path);
  INFO(r.dump());
  CHECK(r["status"] == "done");
  CHECK(CountFrames(s.dir + "/out/oom.mp4") == kClipFrames);
  // 8 frames per call -> 4 -> 2 -> 1 -> tiles of 256 (0.75 MiB): four errors, each survived.
  CHECK(r["model_fallbacks"]["events"] == 4);
  CHECK(r["model_fallbacks"]["batch"] == 1);
  CHECK(r["model_fallbacks"]["tile"] == 256);
  CHECK(r["chunk_retries"] == 0);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  // The frames are those of the whole-frame job without the hook.
  RunResult plain = RunJob(s.dir, LosslessJob(TestClip("d0.mp4"), s.dir + "/plain.mp4", model));
  REQUIRE_MESSAGE(plain.exit_code == 0, plain.err);
  CHECK(WorstValueDifference(s.dir + "/plain.mp4", s.dir + "/out/oom.mp4") <= 1);
}

TEST_CASE("tiles: with tile off, out of memory at one frame per call fails the job, saying so") {
  const std::string dir = ScratchDir("tiles_oom_off");
  nlohmann::json job = LosslessJob(TestClip("d0.mp4"), dir + "/out.mp4", ModelPath("sharpen"));
  job["max_attempts"] = 1;
  RunResult r = RunJob(dir, job, WithFaultWorker(), {{"FRAMEMILL_TEST_FAULT", "oom_over:1"}});
  CHECK(r.exit_code == 1);
  INFO(r.err);
  CHECK(r.err.find("out of memory with one whole 512x512 frame per model call, and tile is off") !=
        std::string::npos);
}
