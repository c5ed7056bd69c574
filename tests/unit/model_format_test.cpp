// Model files told by their content (common/model_format.h) and loaded whatever their format
// (worker/model/model_loader.h LoadFrameModel): a TorchScript file exported here, and a real .pt2
// package (tests/data/tiny-cuda.pt2, made by scripts/export-pt2.py on an H200 with torch 2.11:
// see tests/data/SOURCES.md).
#include "doctest_with_torch.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/model_format.h"
#include "worker/model/example_models.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"
#include "worker/model/pt2_model.h"

using namespace framemill;

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kPackage = std::string(FRAMEMILL_SOURCE_DIR) + "/tests/data/tiny-cuda.pt2";

std::string ExportedTorchScript() {
  char dir[] = "/tmp/framemill-format-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/sharpen.pt";
  REQUIRE(ExportExampleModel("sharpen", path).ok());
  return path;
}

}  // namespace

TEST_CASE("a TorchScript file and a .pt2 package are told apart by their content") {
  const std::string script = ExportedTorchScript();
  Result<ModelFormat> s = DetectModelFormat(ReadAll(script));
  REQUIRE(s.ok());
  CHECK(*s == ModelFormat::kTorchScript);
  const std::string package = ReadAll(kPackage);
  REQUIRE(package.size() > 1000);
  Result<ModelFormat> p = DetectModelFormat(package);
  REQUIRE(p.ok());
  CHECK(*p == ModelFormat::kPt2);
}

TEST_CASE("bytes that are no model file are refused saying what they are") {
  Result<ModelFormat> text = DetectModelFormat("not a model at all, just text");
  REQUIRE_FALSE(text.ok());
  CHECK(text.status().message().find("not a zip archive") != std::string::npos);
  // A package cut short loses its zip directory (at the end).
  const std::string package = ReadAll(kPackage);
  Result<ModelFormat> cut = DetectModelFormat(package.substr(0, package.size() / 2));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().message().find("not a zip archive") != std::string::npos);
  // A zip archive of something else: a TorchScript file's bytes with its entry names changed.
  std::string other = ReadAll(ExportedTorchScript());
  for (const char* name : {"data.pkl", "/code/"}) {
    for (size_t at = other.find(name); at != std::string::npos; at = other.find(name, at + 1)) {
      other[at + 1] = 'X';
    }
  }
  Result<ModelFormat> zip = DetectModelFormat(other);
  REQUIRE_FALSE(zip.ok());
  CHECK(zip.status().message().find("neither TorchScript") != std::string::npos);
}

TEST_CASE("a .pt2 package is refused saying why where it cannot run") {
  Result<std::unique_ptr<FrameModel>> cpu =
      LoadFrameModel(kPackage, torch::Device(torch::kCPU), torch::kFloat32);
  REQUIRE_FALSE(cpu.ok());
  if (!Pt2Supported()) {
    // LibTorch before 2.6 (Debian's 1.13): the package is recognised and refused, naming the cause.
    CHECK(cpu.status().message().find("without AOTInductor packages") != std::string::npos);
  } else {
    // A package compiled for CUDA does not run on the CPU.
    CHECK(cpu.status().message().find("compiled for cuda") != std::string::npos);
  }
}
