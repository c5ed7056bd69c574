// A model made for one shape (a .pt2 package exported with --shape and --batch: its card's
// fixed_width, fixed_height and fixed_batch, common/model_card.h), end to end: the real framemill
// and its workers on a real clip (d0.mp4 of the shared test data, 512x512, 78 frames). The model is a
// TorchScript stand-in that raises on any other shape (shape_model.cpp), so the job is
// frame-exact only if every call comes at that shape: the worker's probe (supervisor/job/
// model_fit.h ProbeShapeFor), the warm-up, and each chunk's short last batch (78 frames in chunks
// of 32 leave 14: three batches of 4 and one of 2, padded).
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_util.h"
#include "common/model_card.h"
#include "supervisor/engines/engine_cache.h"
#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kSide = 512;  // d0.mp4 is 512x512
constexpr int kClipFrames = 78;

// Writes the one-shape model to dir/one-shape.pt and returns its path; with `card`, its card.
std::string OneShapeModel(const std::string& dir, int batch, int width, int height, bool card) {
  const std::string path = dir + "/one-shape.pt";
  RunResult made = Shell(std::string(FRAMEMILL_SHAPE_MODEL_BIN) + " " + path + " " +
                         std::to_string(batch) + " " + std::to_string(width) + " " +
                         std::to_string(height));
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  if (card) {
    framemill::ModelCard c;
    c.name = "one-shape";
    c.format = "torchscript";
    c.fixed_width = width;
    c.fixed_height = height;
    c.fixed_batch = batch;
    REQUIRE(framemill::SaveModelCard(path, c).ok());
  }
  return path;
}

}  // namespace

TEST_CASE("fixed shape: a model for one shape is probed and fed at it, the short batch padded") {
  const std::string dir = ScratchDir("fixed_shape_runs");
  const std::string clip = TestClip("d0.mp4");
  nlohmann::json reference = LosslessJob(clip, dir + "/identity.mp4", ModelPath("identity"));
  reference["batch"] = 4;
  RunResult whole = RunJob(dir, reference);
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  // Without its card nothing tells the worker the shape: its probe (a 64x64 square) is refused.
  const std::string model = OneShapeModel(dir, 4, kSide, kSide, /*card=*/false);
  nlohmann::json job = LosslessJob(clip, dir + "/one-shape.mp4", model);
  job["batch"] = 4;
  RunResult blind = RunJob(dir, job);
  CHECK(blind.exit_code != 0);
  CHECK(blind.err.find("this model takes one shape only") != std::string::npos);

  // With it, every call is [4, 3, 512, 512] and the output is the identity's, frame for frame.
  OneShapeModel(dir, 4, kSide, kSide, /*card=*/true);
  RunResult fixed = RunJob(dir, job);
  REQUIRE_MESSAGE(fixed.exit_code == 0, fixed.err);
  CHECK(fixed.err.find("model maps 512x512 to 512x512") != std::string::npos);
  CHECK(CountFrames(dir + "/one-shape.mp4") == kClipFrames);
  CHECK(FrameHashes(dir + "/one-shape.mp4", kSide, kSide) ==
        FrameHashes(dir + "/identity.mp4", kSide, kSide));
}

TEST_CASE("fixed shape: a job the one-shape model cannot take is refused before a frame is decoded") {
  const std::string dir = ScratchDir("fixed_shape_refused");
  const std::string model = OneShapeModel(dir, 4, kSide, kSide, /*card=*/true);
  struct Case {
    std::string what, clip;
    nlohmann::json keys;
    std::string says;
  };
  const Case cases[] = {
      {"another batch", "d0.mp4", {{"batch", 8}},
       "made for batches of exactly 4 (its card says so); this job's batch is 8"},
      {"another frame size", "d20.mp4", {{"batch", 4}},
       "was made for frames of exactly 512x512 (a package for one size); this input is 480x480"},
      {"tiles", "d0.mp4", {{"batch", 4}, {"tile", "auto"}}, "runs whole frames only"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    nlohmann::json job = LosslessJob(TestClip(c.clip), dir + "/out.mp4", model);
    job.update(c.keys);
    RunResult r = RunJob(dir, job);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
    // Refused at the check: no worker was started.
    CHECK(r.err.find("ready on") == std::string::npos);
  }
}

TEST_CASE("fixed shape: a card added beside a loaded model gets workers probed at its shape") {
  // The service keeps loaded workers for the next job of the same model file. A card added
  // beside it changes the shape the workers must be probed at (and whether they pad), so the
  // warm workers, probed at 64x64 one frame at a time, are not handed over.
  Service s = MakeService("fixed_shape_warm");
  const std::string identity = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 24);
  const nlohmann::json video = FirstStream(Probe(input), "video");
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  auto run = [&](const std::string& id) {
    Drop(s, id,
         nlohmann::json{{"input", input},
                        {"output", s.dir + "/out/" + id + ".mp4"},
                        {"model", identity},
                        {"workers", 1},
                        {"batch", 4}}
             .dump());
    const std::string done = s.spool + "/done/" + id + "/result.json";
    const std::string failed = s.spool + "/failed/" + id + "/result.json";
    REQUIRE(WaitUntil([&] { return fs::exists(done) || fs::exists(failed); }, 60));
    nlohmann::json r = ReadJson(fs::exists(done) ? done : failed);
    INFO(id << ": " << r.dump());
    REQUIRE(r["status"] == "done");
    CHECK(CountFrames(s.dir + "/out/" + id + ".mp4") == 24);
    return r;
  };
  const nlohmann::json before = run("before");
  framemill::ModelCard card;
  card.name = "identity";
  card.format = "torchscript";
  card.fixed_width = video["width"].get<int64_t>();
  card.fixed_height = video["height"].get<int64_t>();
  card.fixed_batch = 4;
  REQUIRE(framemill::SaveModelCard(identity, card).ok());
  const nlohmann::json after = run("after");
  INFO(before.dump() << "\n" << after.dump());
  CHECK(before["workers_warm"] == false);
  CHECK(after["workers_warm"] == false);
  CHECK(after["workers_started"] == 1);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

// model_optimization compile (supervisor/engines/): where no compiled engine applies or none is
// cached, the job runs its TorchScript model and one line says why; an engine is never built
// where there is no GPU, and the command says so; the cache lists and clears its entries.
TEST_CASE("compiled engines: a job runs TorchScript with the reason, the cache lists and clears") {
  const std::string dir = ScratchDir("compiled_engines");
  const Env cache_env = {{"XDG_CACHE_HOME", dir + "/cache"}, {"CACHE_DIRECTORY", ""}};
  nlohmann::json job = LosslessJob(TestClip("d0.mp4"), dir + "/out.mp4", ModelPath("identity"));
  job["model_optimization"] = "compile";
  RunResult r = RunJob(dir, job, nullptr, cache_env);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("model_optimization compile: running TorchScript: ") != std::string::npos);
  if (TestDevice() == "cpu") {
    CHECK(r.err.find("running TorchScript: the job runs on the CPU") != std::string::npos);
  }
  CHECK(CountFrames(dir + "/out.mp4") == kClipFrames);

  if (!framemill::HostHasNvidiaDriver()) {
    BackgroundJob compile = StartFramemill(
        dir, {"model", "compile", ModelPath("identity"), "--shape", "512x512", "--batch", "4"},
        cache_env, "compile");
    RunResult built = WaitJob(compile);
    CHECK(built.exit_code == 1);
    CHECK(built.err.find("no engine can be built here: no NVIDIA GPU 0") != std::string::npos);
  }

  // An entry as a build leaves it, listed, then cleared.
  const std::string cache = dir + "/cache/framemill/engines";
  const std::string build = cache + "/.build-test";
  fs::create_directories(build);
  fs::permissions(dir + "/cache/framemill", fs::perms::owner_all);
  std::ofstream(build + "/engine.pt2") << "not a real package";
  framemill::EngineKey key;
  key.model_sha256 = std::string(64, '0');
  key.width = key.height = kSide;
  key.batch = 4;
  key.gpu = "NVIDIA H100 80GB HBM3";
  REQUIRE(framemill::KeepEngine(cache, build, key, 12.0).ok());
  RunResult list = WaitJob(StartFramemill(dir, {"model", "engines"}, cache_env, "list"));
  CHECK(list.exit_code == 0);
  CHECK(list.out.find(key.Id() + "\tshape 512x512, batch 4, precision fp16, gpu NVIDIA H100") !=
        std::string::npos);
  RunResult clear =
      WaitJob(StartFramemill(dir, {"model", "engines", "--clear"}, cache_env, "clear"));
  CHECK(clear.exit_code == 0);
  CHECK(clear.out == "removed 1 engine from " + cache + "\n");
  CHECK(ListDir(cache).empty());
}
