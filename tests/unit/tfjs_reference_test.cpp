// The imported TF.js models against the original: the same real frames (a 64x48 or 32x24 crop of
// flower.webm from the shared test data) through TensorFlow.js (pure JavaScript, CPU, under Node:
// tests/reference/tfjs_reference.js) and through the imported TorchScript module loaded the way
// the worker loads a model (LoadTorchScriptModel). Both give [0,1]; the largest difference must
// stay below kBound (1e-3 of the range, a quarter of one 8-bit step): float32 sums in another
// order differ by about 1e-6 (measured: 0.7e-6 to 1.3e-6); a kernel transposed by mistake gave
// 0.10.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"
#include "worker/model_import/tfjs_layers_network.h"

#include "doctest_with_torch.h"

#include "tests/unit/model_packages.h"
#include "tests/unit/skip.h"

using namespace framemill;

namespace {

constexpr double kBound = 1e-3;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Run(const std::string& command) {
  INFO(command);
  return std::system(command.c_str());
}

// The largest |TF.js - imported| over `frames` frames (a width x height crop) of the clip
// through `model_json`.
double MaxDifference(const std::string& model_json, int scale, int frames, int width = 64,
                     int height = 48) {
  char tmpl[] = "/tmp/framemill_tfjs_ref_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::string in = dir + "/in.rgb", ref = dir + "/ref.f32", pt = dir + "/model.pt";
  // A crop with petals, leaves and edges, not a flat area.
  REQUIRE(Run(std::string(FRAMEMILL_TEST_FFMPEG) + " -v error -i " + unit::TestClip("flower.webm") +
              " -vf crop=" + std::to_string(width) + ":" +
              std::to_string(height) + ":440:230,format=rgb24 -frames:v " + std::to_string(frames) +
              " -f rawvideo " + in) == 0);
  REQUIRE(Run(std::string(FRAMEMILL_TEST_NODE) + " " + FRAMEMILL_SOURCE_DIR +
              "/tests/reference/tfjs_reference.js " + unit::ModelPackagesDir() + "/tfjs-4.22.0 " +
              model_json + " " + in + " " + std::to_string(width) + " " + std::to_string(height) +
              " " + std::to_string(frames) + " " + ref) == 0);

  Result<ImportedNetwork> net = ImportTfjsLayersNetwork(model_json);
  REQUIRE_MESSAGE(net.ok(), net.status().message());
  net->module.save(pt);
  Result<std::unique_ptr<FrameModel>> model = LoadTorchScriptModel(pt, torch::kCPU);
  REQUIRE_MESSAGE(model.ok(), model.status().message());

  const std::string rgb = ReadBytes(in);
  REQUIRE(rgb.size() == static_cast<size_t>(frames * width * height * 3));
  torch::Tensor batch =
      torch::from_blob(const_cast<char*>(rgb.data()), {frames, height, width, 3}, torch::kUInt8)
          .permute({0, 3, 1, 2})
          .to(torch::kFloat32)
          .div(255.0)
          .contiguous();
  Result<torch::Tensor> out = (*model)->Run(batch);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  REQUIRE(out->sizes() == torch::IntArrayRef({frames, 3, height * scale, width * scale}));

  const std::string expected = ReadBytes(ref);
  REQUIRE(expected.size() == static_cast<size_t>(out->numel()) * sizeof(float));
  torch::Tensor want = torch::from_blob(const_cast<char*>(expected.data()),
                                        {frames, height * scale, width * scale, 3}, torch::kFloat32)
                           .permute({0, 3, 1, 2});
  // The output is a real upscale of the input, not a constant: it spans most of [0,1].
  CHECK(want.max().item<float>() - want.min().item<float>() > 0.3);
  double diff = (*out - want).abs().max().item<double>();
  MESSAGE(model_json << ": max |TF.js - imported| = " << diff);
  (void)RemoveTree(dir);
  return diff;
}

}  // namespace

TEST_CASE("tfjs reference: esrgan-slim x2 imported equals TensorFlow.js on real frames") {
  const std::string model = unit::PackageFile("esrgan-slim-1.0.0/package/models/x2/model.json");
  unit::PackageFile("tfjs-4.22.0/node_modules/@tensorflow/tfjs/package.json");
  CHECK(MaxDifference(model, 2, 2) < kBound);
}

TEST_CASE("tfjs reference: esrgan-slim x4 imported equals TensorFlow.js on a real frame") {
  const std::string model = unit::PackageFile("esrgan-slim-1.0.0/package/models/x4/model.json");
  unit::PackageFile("tfjs-4.22.0/node_modules/@tensorflow/tfjs/package.json");
  CHECK(MaxDifference(model, 4, 1) < kBound);
}

TEST_CASE("tfjs reference: esrgan-medium x3 imported equals TensorFlow.js on a real frame") {
  const std::string model = unit::PackageFile("esrgan-medium-1.0.0/package/models/x3/model.json");
  unit::PackageFile("tfjs-4.22.0/node_modules/@tensorflow/tfjs/package.json");
  // The 64-layer network, on a 32x24 crop: pure-JavaScript TF.js takes most of this test's time.
  CHECK(MaxDifference(model, 3, 1, 32, 24) < kBound);
}
