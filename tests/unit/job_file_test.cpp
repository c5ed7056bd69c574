#include <doctest/doctest.h>

#include "common/job_file.h"

using framemill::JobSettings;
using framemill::ParseJob;
using framemill::StatusCode;
using nlohmann::json;

namespace {

json MinimalJob() {
  return {{"input", "/in/a.mp4"}, {"output", "/out/a.mp4"}, {"model", "/m/id.pt"}};
}

std::string ErrorOf(const json& j) {
  auto r = ParseJob(j, JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidJob);
  return r.status().message();
}

}  // namespace

TEST_CASE("a minimal job takes every optional value from the defaults") {
  JobSettings defaults;
  defaults.chunk_frames = 48;
  defaults.workers = 5;
  defaults.encoder.crf = 23;
  auto r = ParseJob(MinimalJob(), defaults);
  REQUIRE(r.ok());
  CHECK(r->input == "/in/a.mp4");
  CHECK(r->settings.chunk_frames == 48);
  CHECK(r->settings.workers == 5);
  CHECK(r->settings.encoder.crf == 23);
  CHECK(r->settings.encoder.codec == "libx264");
  CHECK_FALSE(r->overwrite);
}

TEST_CASE("job keys override the defaults, the encoder key by key") {
  json j = MinimalJob();
  j["chunk_frames"] = 64;
  j["workers"] = 2;
  j["device"] = "cuda:1";
  j["encoder"] = {{"crf", 12}};
  j["overwrite"] = true;
  auto r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->settings.chunk_frames == 64);
  CHECK(Name(r->settings.device) == "cuda:1");
  CHECK(r->settings.encoder.crf == 12);
  CHECK(r->settings.encoder.preset == "medium");  // untouched default
  CHECK(r->overwrite);
}

TEST_CASE("every required key, when missing, is named") {
  for (const char* key : {"input", "output", "model"}) {
    json j = MinimalJob();
    j.erase(key);
    CHECK(ErrorOf(j) == std::string("job.") + key + ": required key is missing");
  }
}

TEST_CASE("wrong types are rejected with the key's name") {
  json j = MinimalJob();
  j["input"] = 42;
  CHECK(ErrorOf(j) == "job.input: expected a string, got number");
  j = MinimalJob();
  j["chunk_frames"] = "64";
  CHECK(ErrorOf(j) == "job.chunk_frames: expected an integer, got string");
  j = MinimalJob();
  j["chunk_frames"] = 6.5;
  CHECK(ErrorOf(j) == "job.chunk_frames: expected an integer, got number");
  j = MinimalJob();
  j["overwrite"] = "yes";
  CHECK(ErrorOf(j) == "job.overwrite: expected true or false, got string");
  j = MinimalJob();
  j["encoder"] = "libx264";
  CHECK(ErrorOf(j) == "job.encoder: expected an object, got string");
  j = MinimalJob();
  j["encoder"] = {{"crf", "high"}};
  CHECK(ErrorOf(j) == "job.encoder.crf: expected an integer, got string");
  CHECK(ErrorOf(json::array({1, 2})).find("job: expected a JSON object") == 0);
}

TEST_CASE("unknown keys are rejected with their name, nested ones too") {
  json j = MinimalJob();
  j["chunk_size"] = 64;
  CHECK(ErrorOf(j) == "job.chunk_size: unknown key");
  j = MinimalJob();
  j["encoder"] = {{"crf", 18}, {"bitrate", "5M"}};
  CHECK(ErrorOf(j) == "job.encoder.bitrate: unknown key");
}

TEST_CASE("absurd values are rejected with the key and the allowed range") {
  json j = MinimalJob();
  j["chunk_frames"] = 0;
  CHECK(ErrorOf(j) == "job.chunk_frames: must be between 1 and 4096, got 0");
  j["chunk_frames"] = -5;
  CHECK(ErrorOf(j).find("job.chunk_frames: must be between") == 0);
  j = MinimalJob();
  j["workers"] = 1000000;
  CHECK(ErrorOf(j) == "job.workers: must be between 1 and 64, got 1000000");
  j = MinimalJob();
  j["workers"] = 18446744073709551615ull;
  CHECK(ErrorOf(j) == "job.workers: value out of range");
  j = MinimalJob();
  j["segment_seconds"] = 0;
  CHECK(ErrorOf(j).find("job.segment_seconds: must be between") == 0);
  j = MinimalJob();
  j["device"] = "gpu";
  CHECK(ErrorOf(j).find("job.device: must be auto, cpu, cuda or cuda:N") == 0);
  j = MinimalJob();
  j["input"] = "";
  CHECK(ErrorOf(j) == "job.input: must not be empty");
  j = MinimalJob();
  j["precision"] = "int8";
  CHECK(ErrorOf(j) == "job.precision: must be fp32, fp16 or bf16, got \"int8\"");
}

TEST_CASE("input and output must differ") {
  json j = MinimalJob();
  j["output"] = j["input"];
  CHECK(ErrorOf(j) == "job.output: must differ from job.input");
}

TEST_CASE("an encoder without presets may say so with an empty preset") {
  json j = MinimalJob();
  j["encoder"] = {{"codec", "libvpx-vp9"}, {"preset", ""}, {"crf", 30}};
  auto r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->settings.encoder.preset.empty());
  CHECK(r->settings.encoder.codec == "libvpx-vp9");
}

TEST_CASE("alpha: auto unless the job says keep or drop, anything else is named") {
  auto r = ParseJob(MinimalJob(), JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->alpha == framemill::AlphaMode::kAuto);
  json j = MinimalJob();
  j["alpha"] = "keep";
  r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->alpha == framemill::AlphaMode::kKeep);
  j["alpha"] = "drop";
  r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->alpha == framemill::AlphaMode::kDrop);
  j["alpha"] = "opaque";
  CHECK(ErrorOf(j) == "job.alpha: must be auto, keep or drop");
  j["alpha"] = true;
  CHECK(ErrorOf(j) == "job.alpha: expected a string, got boolean");
}

TEST_CASE("truncated_input: refuse unless the job says accept, anything else is named") {
  auto r = ParseJob(MinimalJob(), JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->truncated_input == framemill::TruncatedInput::kRefuse);
  json j = MinimalJob();
  j["truncated_input"] = "accept";
  r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->truncated_input == framemill::TruncatedInput::kAccept);
  j["truncated_input"] = "refuse";
  r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->truncated_input == framemill::TruncatedInput::kRefuse);
  j["truncated_input"] = "yes";
  CHECK(ErrorOf(j) == "job.truncated_input: must be refuse or accept, got \"yes\"");
}
