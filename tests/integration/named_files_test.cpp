// Every file a job names besides its input and model: the model's card, the face detector and
// the face table. Each is opened once and checked as the model and the input are (a regular
// file inside the config's roots), a card's sha256 must be its model's, and what a refused file
// holds never comes back in a message.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr char kSecret[] = "TOP-SECRET-FIRST-LINE";

struct Tree {
  std::string dir, in, out, models, outside, clip, model;
  nlohmann::json config;
};

Tree MakeTree(const std::string& name) {
  Tree t;
  t.dir = ScratchDir("named_" + name);
  t.in = t.dir + "/in";
  t.out = t.dir + "/out";
  t.models = t.dir + "/models";
  t.outside = t.dir + "/outside";
  for (const std::string& d : {t.in, t.out, t.models, t.outside}) fs::create_directories(d);
  t.clip = t.in + "/clip.mp4";
  MakeIndexVideo(t.clip, 16, 64, 64, 25, /*tone_hz=*/0);
  t.model = t.models + "/identity.pt";
  fs::copy_file(ModelPath("identity"), t.model);
  // Another user's private file, as an attacker would point a name at it.
  std::ofstream(t.outside + "/secret.json") << kSecret << "\n{\"not\": \"json\"}\n";
  t.config = {{"allowed_input_roots", {t.in}},
              {"allowed_output_roots", {t.out}},
              {"allowed_model_roots", {t.models}},
              {"worker_binary", FRAMEMILL_WORKER_BIN}};
  return t;
}

nlohmann::json Job(const Tree& t) {
  return {{"input", t.clip},      {"output", t.out + "/o.mp4"}, {"model", t.model},
          {"workers", 1},         {"chunk_frames", 8},          {"device", TestDevice()},
          {"overwrite", true}};
}

// A card for the identity model that fits any frame, with `sha256`.
std::string Card(const std::string& sha256) {
  nlohmann::json card = {{"card_version", 1},         {"name", "identity"},
                         {"format", "torchscript"},   {"architecture", ""},
                         {"scale", 1},                {"channels", 3},
                         {"source_channel_order", "rgb"}, {"source_value_range", "0-1"},
                         {"receptive_field", 0},      {"min_size", 1},
                         {"size_multiple", 1},        {"licence", ""},
                         {"source", ""},              {"sha256", sha256}};
  return card.dump(2);
}

}  // namespace

TEST_CASE("named files: a model card linked outside the model roots is refused, its bytes unread") {
  Tree t = MakeTree("card_link");
  REQUIRE(::symlink((t.outside + "/secret.json").c_str(), (t.model + ".json").c_str()) == 0);
  RunResult r = RunJob(t.dir, Job(t), t.config);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("model card") != std::string::npos);
  CHECK(r.err.find("outside") != std::string::npos);
  CHECK(r.err.find(kSecret) == std::string::npos);
  CHECK(r.out.find(kSecret) == std::string::npos);
  CHECK(!fs::exists(t.out + "/o.mp4"));
}

TEST_CASE("named files: a malformed card's error names the line, never the bytes it read") {
  Tree t = MakeTree("card_bad");
  std::ofstream(t.model + ".json") << kSecret << "\n";
  RunResult r = RunJob(t.dir, Job(t), t.config);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("malformed JSON") != std::string::npos);
  CHECK(r.err.find(kSecret) == std::string::npos);
  CHECK(r.err.find("TOP-SECRET") == std::string::npos);
}

TEST_CASE("named files: a card whose sha256 is not its model's fails the job, the right one runs") {
  Tree t = MakeTree("card_digest");
  const std::string wrong(64, 'a');
  std::ofstream(t.model + ".json") << Card(wrong);
  RunResult r = RunJob(t.dir, Job(t), t.config);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("not the one its card describes") != std::string::npos);
  CHECK(r.err.find(wrong) != std::string::npos);
  CHECK(!fs::exists(t.out + "/o.mp4"));
  framemill::Result<std::string> digest = framemill::Sha256OfFile(t.model);
  REQUIRE(digest.ok());
  std::ofstream(t.model + ".json", std::ios::trunc) << Card(*digest);
  RunResult ok = RunJob(t.dir, Job(t), t.config);
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);
  CHECK(fs::exists(t.out + "/o.mp4"));
}

TEST_CASE("named files: a face table outside the input roots, or a FIFO, is refused at once") {
  Tree t = MakeTree("face_table");
  nlohmann::json job = Job(t);
  job["mode"] = "faces";
  job["face_table"] = t.outside + "/secret.json";
  RunResult outside = RunJob(t.dir, job, t.config);
  CHECK(outside.exit_code != 0);
  CHECK(outside.err.find("face_table") != std::string::npos);
  CHECK(outside.err.find(kSecret) == std::string::npos);
  const std::string fifo = t.in + "/table.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  job["face_table"] = fifo;
  RunResult blocked = RunJob(t.dir, job, t.config);  // a FIFO never blocks the job
  CHECK(blocked.exit_code != 0);
  CHECK(blocked.err.find("not a regular file") != std::string::npos);
}

TEST_CASE("named files: a face detector outside the model roots is refused before any parse") {
  Tree t = MakeTree("face_detector");
  nlohmann::json job = Job(t);
  job["mode"] = "faces";
  // A tiny ONNX-looking file: OpenCV must never read it.
  std::ofstream(t.outside + "/over.onnx") << std::string("\x08\x07\x12\x00", 4);
  job["face_detector"] = t.outside + "/over.onnx";
  RunResult r = RunJob(t.dir, job, t.config);
  CHECK(r.exit_code != 0);
  CHECK(r.signal == 0);
  CHECK(r.err.find("face_detector") != std::string::npos);
  CHECK(r.err.find("outside") != std::string::npos);
}
