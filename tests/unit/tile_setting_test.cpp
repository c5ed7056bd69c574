// The job key `tile` (common/tile_setting.h): how it is read from a job and the config's
// defaults, the worker's --tile word, its place in the warm-pool key, and the fallback figures a
// worker reports (checked on arrival, summed into the job's result).
#include <doctest/doctest.h>

#include "common/config.h"
#include "common/job_file.h"
#include "common/shm_validate.h"
#include "common/tile_setting.h"
#include "supervisor/job/warm_key.h"
#include "supervisor/report/job_result.h"

using namespace framemill;
using nlohmann::json;

namespace {

json JobWith(const json& tile) {
  return {{"input", "/in/a.mp4"}, {"output", "/out/a.mp4"}, {"model", "/m/id.pt"}, {"tile", tile}};
}

// The message of the error a job with `tile` gets.
std::string TileError(const json& tile) {
  Result<JobSpec> r = ParseJob(JobWith(tile), JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidJob);
  CHECK(r.status().message().rfind("job.tile: ", 0) == 0);  // names the key
  return r.status().message();
}

}  // namespace

TEST_CASE("tile: absent, off, auto and a size are read, each into its mode") {
  Result<JobSpec> absent = ParseJob(
      json{{"input", "/in/a.mp4"}, {"output", "/out/a.mp4"}, {"model", "/m/id.pt"}}, JobSettings{});
  REQUIRE(absent.ok());
  CHECK(absent->settings.tile.mode == TileMode::kOff);
  Result<JobSpec> off = ParseJob(JobWith("off"), JobSettings{});
  REQUIRE(off.ok());
  CHECK(off->settings.tile.mode == TileMode::kOff);
  Result<JobSpec> autom = ParseJob(JobWith("auto"), JobSettings{});
  REQUIRE(autom.ok());
  CHECK(autom->settings.tile.mode == TileMode::kAuto);
  CHECK(autom->settings.tile.overlap == kAutoTileOverlap);
  Result<JobSpec> fixed = ParseJob(JobWith({{"size", 256}, {"overlap", 16}}), JobSettings{});
  REQUIRE(fixed.ok());
  CHECK(fixed->settings.tile == TileSetting{TileMode::kFixed, 256, 16});
}

TEST_CASE("tile: the config's defaults give it, a job overrides it") {
  Result<Config> c = ParseConfig(json{{"defaults", {{"tile", {{"size", 512}, {"overlap", 32}}}}}});
  REQUIRE(c.ok());
  CHECK(c->defaults.tile == TileSetting{TileMode::kFixed, 512, 32});
  Result<JobSpec> job = ParseJob(JobWith("off"), c->defaults);
  REQUIRE(job.ok());
  CHECK(job->settings.tile.mode == TileMode::kOff);
  Result<Config> bad = ParseConfig(json{{"defaults", {{"tile", "on"}}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("defaults.tile") != std::string::npos);
}

TEST_CASE("tile: bad values are refused, naming the key and the rule") {
  CHECK(TileError("on").find("\"on\"") != std::string::npos);
  CHECK(TileError(256).find("must be") != std::string::npos);
  CHECK(TileError({{"size", 32}, {"overlap", 0}}).find("size must be in 64..16384") !=
        std::string::npos);
  CHECK(TileError({{"size", 20000}, {"overlap", 0}}).find("size must be in") != std::string::npos);
  CHECK(TileError({{"size", 256}, {"overlap", -1}}).find("overlap must be in") !=
        std::string::npos);
  // 2 * 20 + 32 = 72 > 64: a tile would be nearly all overlap.
  CHECK(TileError({{"size", 64}, {"overlap", 20}}).find("at least 2 * overlap + 32 = 72") !=
        std::string::npos);
  CHECK(TileError({{"size", 256}}).find("overlap is missing") != std::string::npos);
  CHECK(TileError({{"overlap", 8}}).find("size is missing") != std::string::npos);
  CHECK(TileError({{"size", 256}, {"overlap", 8}, {"blend", true}}).find("unknown key \"blend\"") !=
        std::string::npos);
  CHECK(TileError({{"size", 256.5}, {"overlap", 8}}).find("integer") != std::string::npos);
}

TEST_CASE("tile: the worker's --tile word round-trips, and bad words are refused") {
  for (const TileSetting& t : {TileSetting{}, TileSetting{TileMode::kAuto, 0, kAutoTileOverlap},
                               TileSetting{TileMode::kFixed, 128, 16}}) {
    std::optional<TileSetting> back = ParseTileSetting(Name(t));
    REQUIRE(back.has_value());
    CHECK(*back == t);
  }
  CHECK(Name(TileSetting{TileMode::kFixed, 128, 16}) == "128:16");
  for (const char* bad : {"", "on", "128", ":16", "128:", "64:20", "a:b", "128:16:1", "-128:16"}) {
    INFO(std::string(bad));
    CHECK_FALSE(ParseTileSetting(bad).has_value());
  }
}

TEST_CASE("tile: workers started with another tile setting do not fit the job") {
  JobSettings s;
  FileIdentity model;
  model.real_path = "/models/x.pt";
  const std::string key = WarmKey(1000, model, s, "logs");
  JobSettings t = s;
  t.tile = {TileMode::kAuto, 0, kAutoTileOverlap};
  CHECK(WarmKey(1000, model, t, "logs") != key);
  t.tile = {TileMode::kFixed, 256, 16};
  const std::string fixed = WarmKey(1000, model, t, "logs");
  CHECK(fixed != key);
  t.tile.overlap = 24;
  CHECK(WarmKey(1000, model, t, "logs") != fixed);
}

TEST_CASE("tile: a worker's fallback figures are checked, then summed into the result") {
  const std::vector<HeldChunk> held = {{4, 1, 32}};
  ChunkResult r{};
  r.chunk_id = 4;
  r.slot = 1;
  r.frames_done = 32;
  r.fallback_events = 3;
  r.fallback_per_call = 1;
  r.fallback_tile = 160;
  size_t index = 9;
  CHECK(ValidateChunkResult(r, held, &index).ok());
  ChunkResult bad = r;
  bad.fallback_tile = 7;  // no tile is that small
  CHECK(ValidateChunkResult(bad, held, &index).message().find("impossible fallbacks") !=
        std::string::npos);
  bad = r;
  bad.fallback_events = 0xffffffffu;
  CHECK_FALSE(ValidateChunkResult(bad, held, &index).ok());

  DispatchStats d;
  CHECK(ModelFallbacksJson(d) == json{{"events", 0}, {"batch", nullptr}, {"tile", nullptr}});
  CHECK(ModelFallbacksLine(d).empty());
  d.CountFallbacks(3, 2, 0);
  d.CountFallbacks(1, 1, 320);
  d.CountFallbacks(0, 4, 160);
  CHECK(ModelFallbacksJson(d) == json{{"events", 4}, {"batch", 1}, {"tile", 160}});
  CHECK(ModelFallbacksLine(d) ==
        "the model ran out of memory 4 times: now 1 per call, tiles of "
        "160 px");
}
