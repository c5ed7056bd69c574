// The model card (common/model_card.h), the checksum it keeps (common/sha256.h), and what the
// supervisor makes of it for a job (supervisor/job/model_fit.h).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "common/model_card.h"
#include "common/sha256.h"
#include "common/shm_protocol.h"
#include "supervisor/job/model_fit.h"

using namespace framemill;

namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/framemill_card_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

ModelCard Card() {
  ModelCard c;
  c.name = "esrgan-slim-x2";
  c.format = "torchscript";
  c.architecture = "RDN";
  c.scale = 2;
  c.source_value_range = "0-255";
  c.receptive_field = 9;
  c.min_size = 16;
  c.max_size = 4096;
  c.size_multiple = 2;
  c.licence = "MIT";
  c.source = "npm:@upscalerjs/esrgan-slim@1.0.0 models/x2/model.json";
  c.sha256 = Sha256Hex("model");
  return c;
}

}  // namespace

TEST_CASE("sha256: the FIPS 180-4 examples, across block boundaries") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 million;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.Update(chunk.data(), chunk.size());
  CHECK(million.FinishHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("model card: saved beside the model and read back equal") {
  const std::string dir = TempDir();
  const std::string model = dir + "/m.pt";
  CHECK(ModelCardPath(model) == model + ".json");
  Result<std::optional<ModelCard>> none = LoadModelCard(model);
  REQUIRE(none.ok());
  CHECK(!none->has_value());

  REQUIRE(SaveModelCard(model, Card()).ok());
  Result<std::optional<ModelCard>> back = LoadModelCard(model);
  REQUIRE(back.ok());
  REQUIRE(back->has_value());
  CHECK(ModelCardToJson(**back) == ModelCardToJson(Card()));
  CHECK((*back)->max_size == 4096);
  CHECK((*back)->source_value_range == "0-255");

  ModelCard unbounded = Card();
  unbounded.max_size.reset();
  REQUIRE(SaveModelCard(model, unbounded).ok());
  back = LoadModelCard(model);
  REQUIRE(back.ok());
  CHECK(!(*back)->max_size.has_value());
  CHECK(RemoveTree(dir).ok());
}

TEST_CASE("model card: a card that lies is an error naming the key, never ignored") {
  nlohmann::json good = ModelCardToJson(Card());
  REQUIRE(ModelCardFromJson(good).ok());

  // Each bad value, with the key the error must name.
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"colour", "rgb"},  // a key no card has
      {"scale", 0},
      {"source_value_range", "0-65535"},
      {"card_version", 2},
      {"sha256", "xyz"},
      {"max_size", 0},
  };
  for (const auto& [key, value] : bad) {
    nlohmann::json j = good;
    j[key] = value;
    Result<ModelCard> r = ModelCardFromJson(j);
    INFO(key << " = " << value.dump());
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(key) != std::string::npos);
  }

  // On disk: a broken card is an error, not "no card".
  const std::string dir = TempDir();
  std::ofstream(dir + "/m.pt.json") << "{\"name\": ";
  Result<std::optional<ModelCard>> loaded = LoadModelCard(dir + "/m.pt");
  CHECK(!loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kModelInvalid);
  CHECK(RemoveTree(dir).ok());
}

TEST_CASE("model card: CheckInputFits says why an input does not fit") {
  const ModelCard c = Card();  // 16..4096 a side, multiples of 2
  CHECK(CheckInputFits(c, 320, 180).ok());
  CHECK(CheckInputFits(c, 16, 16).ok());
  CHECK(CheckInputFits(c, 4096, 2160).ok());

  Status small = CheckInputFits(c, 8, 8);
  REQUIRE(!small.ok());
  CHECK(small.message().find("at least 16 pixels a side; this input is 8x8") != std::string::npos);
  Status large = CheckInputFits(c, 7680, 4320);
  REQUIRE(!large.ok());
  CHECK(large.message().find("at most 4096") != std::string::npos);
  Status odd = CheckInputFits(c, 321, 180);
  REQUIRE(!odd.ok());
  CHECK(odd.message().find("multiples of 2") != std::string::npos);

  ModelCard unbounded = Card();
  unbounded.max_size.reset();
  CHECK(CheckInputFits(unbounded, 7680, 4320).ok());

  ModelCard grey = Card();
  grey.channels = 1;
  Status channels = CheckInputFits(grey, 320, 180);
  REQUIRE(!channels.ok());
  CHECK(channels.message().find("takes 1 channels") != std::string::npos);
}

TEST_CASE("model card: a package for one shape fixes both sides and the batch, checked") {
  ModelCard one = Card();
  one.fixed_width = 1920;
  one.fixed_height = 1080;
  one.fixed_batch = 4;
  CHECK(HasFixedShape(one));
  CHECK(!HasFixedShape(Card()));
  nlohmann::json j = ModelCardToJson(one);
  Result<ModelCard> back = ModelCardFromJson(j);
  REQUIRE(back.ok());
  CHECK(back->fixed_width == 1920);
  CHECK(back->fixed_height == 1080);
  CHECK(back->fixed_batch == 4);

  // Only that size fits.
  CHECK(CheckInputFits(one, 1920, 1080).ok());
  Status other = CheckInputFits(one, 1280, 720);
  REQUIRE(!other.ok());
  CHECK(other.message().find("exactly 1920x1080") != std::string::npos);
  CHECK(other.message().find("this input is 1280x720") != std::string::npos);
  CHECK(!CheckInputFits(one, 1080, 1920).ok());  // not turned either

  // Cards that contradict themselves, with the key the error names.
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> bad = {
      {"fixed_height", [](nlohmann::json& c) { c.erase("fixed_height"); }},
      {"fixed_width", [](nlohmann::json& c) { c["fixed_width"] = 8; }},       // below min_size
      {"fixed_width", [](nlohmann::json& c) { c["fixed_width"] = 1921; }},    // not a multiple of 2
      {"fixed_width", [](nlohmann::json& c) { c["fixed_height"] = 8192; }},   // above max_size
      {"fixed_batch", [](nlohmann::json& c) { c["max_batch"] = 2; }},         // above max_batch
      {"fixed_batch", [](nlohmann::json& c) { c["fixed_batch"] = 0; }},
      {"fixed_batch", [](nlohmann::json& c) { c.erase("fixed_batch"); }},     // size without batch
  };
  for (const auto& [key, spoil] : bad) {
    nlohmann::json c = j;
    spoil(c);
    INFO(c.dump());
    Result<ModelCard> r = ModelCardFromJson(c);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(key) != std::string::npos);
  }
}

TEST_CASE("model fit: a one-shape package takes its batch only, whole frames only, and is probed at its shape") {
  JobSettings settings;
  settings.batch = 4;
  ModelCard one = Card();
  one.fixed_width = 512;
  one.fixed_height = 288;
  one.fixed_batch = 4;
  CHECK(CheckModelFitsJob(one, "m.pt2", settings, 512, 288).ok());
  CHECK(CheckModelFitsJob(std::nullopt, "m.pt2", settings, 7, 7).ok());  // no card, no check

  JobSettings eight = settings;
  eight.batch = 8;
  Status batch = CheckModelFitsJob(one, "m.pt2", eight, 512, 288);
  REQUIRE(!batch.ok());
  CHECK(batch.message().find("batches of exactly 4") != std::string::npos);
  CHECK(batch.message().find("\"batch\": 4") != std::string::npos);

  JobSettings tiled = settings;
  tiled.tile.mode = TileMode::kAuto;
  Status tile = CheckModelFitsJob(one, "m.pt2", tiled, 512, 288);
  REQUIRE(!tile.ok());
  CHECK(tile.message().find("whole frames only") != std::string::npos);

  JobSettings faces = settings;
  faces.mode = JobMode::kFaces;
  Status face = CheckModelFitsJob(one, "m.pt2", faces, 512, 288);
  REQUIRE(!face.ok());
  CHECK(face.message().find("face mode") != std::string::npos);

  // The probe: the card's shape; without one a kProbeSize square of one frame; face_size in face
  // mode.
  ProbeShape p = ProbeShapeFor(one, settings);
  CHECK(p.width == 512);
  CHECK(p.height == 288);
  CHECK(p.batch == 4);
  ProbeShape plain = ProbeShapeFor(Card(), settings);
  CHECK(plain.width == kProbeSize);
  CHECK(plain.height == kProbeSize);
  CHECK(plain.batch == 1);
  faces.faces.size = 256;
  ProbeShape face_probe = ProbeShapeFor(std::nullopt, faces);
  CHECK(face_probe.width == 256);
  CHECK(face_probe.batch == 1);
}
