// The TF.js importer (worker/model_import/tfjs_layers_network.h) on the real published models
// (npm @upscalerjs/esrgan-slim and -medium, fetched by scripts/fetch-model-packages.sh), and on
// broken copies of them.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "common/file_util.h"
#include "worker/model_import/tfjs_layers_network.h"

#include "doctest_with_torch.h"

#include "tests/unit/model_packages.h"

using namespace framemill;

namespace {

std::string SlimModel(int scale) {
  return unit::PackageFile("esrgan-slim-1.0.0/package/models/x" + std::to_string(scale) +
                           "/model.json");
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of the slim x2 model in a temporary directory: model.json with `json_edit` applied
// (old text -> new text) and the shard with `shard_edit` applied to its bytes.
struct BrokenCopy {
  std::string dir;
  std::string model_json;
  BrokenCopy(const std::pair<std::string, std::string>& json_edit,
             void (*shard_edit)(std::string*)) {
    char tmpl[] = "/tmp/framemill_tfjs_XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    const std::string src = DirName(SlimModel(2));
    std::string json = ReadText(src + "/model.json");
    if (!json_edit.first.empty()) {
      size_t at = json.find(json_edit.first);
      REQUIRE(at != std::string::npos);
      json.replace(at, json_edit.first.size(), json_edit.second);
    }
    std::string shard = ReadText(src + "/group1-shard1of1.bin");
    if (shard_edit != nullptr) shard_edit(&shard);
    model_json = dir + "/model.json";
    std::ofstream(model_json, std::ios::binary) << json;
    std::ofstream(dir + "/group1-shard1of1.bin", std::ios::binary) << shard;
  }
  ~BrokenCopy() { (void)RemoveTree(dir); }
};

std::string Message(const Result<ImportedNetwork>& r) {
  return r.ok() ? std::string("(imported)") : r.status().message();
}

}  // namespace

TEST_CASE("tfjs import: esrgan-slim x2 becomes a graph of its 24 layers and 24 weights") {
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(SlimModel(2));
  REQUIRE_MESSAGE(net.ok(), Message(net));
  CHECK(net->scale == 2);
  CHECK(net->source_value_range == "0-255");
  CHECK(net->architecture.find("24 layers") != std::string::npos);
  CHECK(net->architecture.find("12 Conv2D") != std::string::npos);
  int params = 0;
  for (const auto& p : net->module.named_parameters()) {
    ++params;
    // F_m1, the first convolution: Keras kernel [3, 3, 3, 64] (HWIO) -> torch [64, 3, 3, 3].
    if (p.name == "l1_F_m1_w") CHECK(p.value.sizes() == torch::IntArrayRef({64, 3, 3, 3}));
    if (p.name == "l17_UPN1_w") CHECK(p.value.sizes() == torch::IntArrayRef({64, 64, 5, 5}));
    if (p.name == "l23_SR_w") CHECK(p.value.sizes() == torch::IntArrayRef({3, 12, 3, 3}));
  }
  CHECK(params == 24);
  // The longest chain: before the x2 upsampling F_m1, F_0, F_1_1, F_2_1, GFF_2, UPN2, UPN3
  // (3x3: 1 pixel each) and UPN1 (5x5: 2); after it SR (3x3), half an input pixel:
  // 7 + 2 + 0.5 -> 10.
  CHECK(net->receptive_field == 10);
  torch::NoGradGuard no_grad;
  torch::Tensor y = net->module.forward({torch::full({1, 3, 10, 14}, 0.5)}).toTensor();
  CHECK(y.sizes() == torch::IntArrayRef({1, 3, 20, 28}));
  CHECK(y.min().item<float>() >= 0.0f);
  CHECK(y.max().item<float>() <= 1.0f);
}

TEST_CASE("tfjs import: every published scale of esrgan-slim and esrgan-medium imports") {
  for (const char* size : {"slim", "medium"}) {
    for (int scale : {3, 4, 8}) {
      const std::string path =
          unit::PackageFile(std::string("esrgan-") + size + "-1.0.0/package/models/x" +
                            std::to_string(scale) + "/model.json");
      Result<ImportedNetwork> net = ImportTfjsLayersNetwork(path);
      INFO(path);
      REQUIRE_MESSAGE(net.ok(), Message(net));
      CHECK(net->scale == scale);
      CHECK(net->architecture.find(std::string(size) == "slim" ? "24 layers" : "64 layers") !=
            std::string::npos);
    }
  }
}

TEST_CASE("tfjs import: a truncated shard is an error giving both sizes") {
  BrokenCopy copy({}, [](std::string* shard) { shard->resize(shard->size() - 4); });
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK(net.status().code() == StatusCode::kModelInvalid);
  CHECK_MESSAGE(net.status().message().find("the shard files hold") != std::string::npos,
                Message(net));
  CHECK(net.status().message().find("truncated") != std::string::npos);
}

TEST_CASE("tfjs import: a corrupted shard (bytes that are no number) is an error naming it") {
  // All bits set: a NaN in every float of the first weight.
  BrokenCopy copy({}, [](std::string* shard) { std::fill_n(shard->begin(), 64, '\xff'); });
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK_MESSAGE(net.status().message().find("F_0/kernel") != std::string::npos, Message(net));
  CHECK(net.status().message().find("not finite") != std::string::npos);
}

TEST_CASE("tfjs import: an unknown layer type is an error naming the layer and the type") {
  BrokenCopy copy({"\"class_name\": \"UpSampling2D\"", "\"class_name\": \"Conv2DTranspose\""},
                  nullptr);
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK_MESSAGE(net.status().message().find("layer UPsample") != std::string::npos, Message(net));
  CHECK(net.status().message().find("Conv2DTranspose is not imported") != std::string::npos);
}

TEST_CASE("tfjs import: a weight whose shape the layer does not match is an error") {
  BrokenCopy copy({"\"filters\": 12", "\"filters\": 11"}, nullptr);
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK_MESSAGE(
      net.status().message().find("UPN3/kernel has shape [3,3,32,12]") != std::string::npos,
      Message(net));
}

TEST_CASE("tfjs import: a missing shard is kInputMissing naming the file") {
  BrokenCopy copy({"group1-shard1of1.bin", "group1-shard1of2.bin"}, nullptr);
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK(net.status().code() == StatusCode::kInputMissing);
  CHECK(net.status().message().find("group1-shard1of2.bin") != std::string::npos);
}

TEST_CASE("tfjs import: a shape whose product overflows 64 bits is refused, not wrapped") {
  // 2^32 * 2^32 * 64 * 64 wraps to 0 in int64 arithmetic: a tiny "size" a naive product accepts.
  BrokenCopy copy({R"("name": "F_0/kernel", "shape": [3, 3, 64, 64])",
                   R"("name": "F_0/kernel", "shape": [4294967296, 4294967296, 64, 64])"},
                  nullptr);
  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(copy.model_json);
  REQUIRE(!net.ok());
  CHECK_MESSAGE(net.status().message().find("F_0/kernel: a shape too large") != std::string::npos,
                Message(net));
}
