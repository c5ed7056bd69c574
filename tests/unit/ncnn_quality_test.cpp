// Whether the imported realesr-animevideov3 upscales like the trained network it is: a real clip
// (flower.webm from the shared test data, native pixels) is downscaled by the model's scale with ffmpeg's bicubic,
// then upscaled by the imported model and by bicubic interpolation, and both are compared with
// the original by PSNR. Each scale leaves a still (bicubic | model | original) in the build
// directory for a person to look at: ncnn_quality_x{2,3,4}.ppm.
//
// The bars, and why. realesr-animevideov3 is GAN-trained for anime: on this natural footage it
// flattens texture and sharpens edges, and lands 4.6 to 5.1 dB below bicubic (29.5 to 31.9 dB);
// the same network with its kernels transposed (a wrong weight layout) lands 7.5 dB below, with
// its 64-channel weights' inputs and outputs swapped 29 dB below. So: at most 6 dB below bicubic,
// above 25 dB, best at its own position (any one-pixel shift of the output against the original
// scores lower: a half-pixel resize or shuffle mistake fails this), and better fed RGB than BGR
// (by 0.15 to 0.5 dB: the network is nearly symmetric in colour, but it was trained on RGB).
#include "doctest_with_torch.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "ncnn_files.h"
#include "worker/model_import/ncnn_network.h"

extern char** environ;

using namespace framemill;
using framemill::unit::NcnnModelFile;
using framemill::unit::Slurp;

namespace {

constexpr int kLowWidth = 96, kLowHeight = 54;  // the model's input
constexpr int kFrames = 2;
constexpr int kCentreX = 470, kCentreY = 270;  // the flower, in the clip's 960x540
constexpr double kMarginDb = 6.0;              // how far below bicubic the model may be
constexpr double kFloorDb = 25.0;

// Runs ffmpeg with `args` (quiet); its exit code.
int Ffmpeg(const std::vector<std::string>& args) {
  std::vector<std::string> all = {FRAMEMILL_TEST_FFMPEG, "-nostdin", "-loglevel", "error", "-y"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// kFrames frames of the clip, cropped to width x height around the flower, then scaled to
// out_width x out_height with ffmpeg's bicubic (in RGB): float [N,3,H,W] in [0,1].
torch::Tensor Frames(const std::string& dir, int width, int height, int out_width, int out_height) {
  std::string raw = dir + "/frames.rgb";
  std::string filter = "crop=" + std::to_string(width) + ":" + std::to_string(height) + ":" +
                       std::to_string(kCentreX - width / 2) + ":" +
                       std::to_string(kCentreY - height / 2) +
                       ",format=rgb24,scale=" + std::to_string(out_width) + ":" +
                       std::to_string(out_height) + ":flags=bicubic";
  const std::string clip = unit::TestClip("flower.webm");
  REQUIRE(Ffmpeg({"-ss", "2", "-i", clip, "-frames:v",
                  std::to_string(kFrames), "-vf", filter, "-f", "rawvideo", "-pix_fmt", "rgb24",
                  raw}) == 0);
  std::string bytes = Slurp(raw);
  REQUIRE(bytes.size() == static_cast<size_t>(kFrames) * out_width * out_height * 3);
  return torch::from_blob(bytes.data(), {kFrames, out_height, out_width, 3}, torch::kUInt8)
      .permute({0, 3, 1, 2})
      .to(torch::kFloat32)
      .div(255.0);
}

torch::Tensor ToBytes(const torch::Tensor& x) {
  return x.clamp(0, 1).mul(255.0).round().to(torch::kUInt8);
}

// PSNR in dB of `x` (quantized to 8 bits, as an encoder would get it) against `reference`.
double Psnr(const torch::Tensor& x, const torch::Tensor& reference) {
  torch::Tensor diff = ToBytes(x).to(torch::kFloat64) - ToBytes(reference).to(torch::kFloat64);
  double mse = diff.pow(2).mean().item<double>();
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

// Writes frame 0 of each image side by side as a binary PPM, with no encoder in the way (the GPU
// machine's static ffmpeg has no PNG encoder).
void SaveStill(const std::vector<torch::Tensor>& images, const std::string& ppm) {
  torch::Tensor row = ToBytes(torch::cat(images, 3)[0]).permute({1, 2, 0}).contiguous();
  std::ofstream out(ppm, std::ios::binary);
  out << "P6\n" << row.size(1) << " " << row.size(0) << "\n255\n";
  out.write(static_cast<const char*>(row.data_ptr()), static_cast<std::streamsize>(row.numel()));
  CHECK(out.good());
}

}  // namespace

TEST_CASE(
    "ncnn quality: realesr-animevideov3 x2, x3, x4 upscale a downscaled real clip about as "
    "well as bicubic, in the right colours") {
  std::string dir = std::string(FRAMEMILL_TEST_OUTPUT_DIR) + "/ncnn_quality";
  // common/file_util.h, not std::filesystem, which crashes in a LibTorch 2.11 process.
  REQUIRE(RemoveTree(dir).ok());
  REQUIRE(MakeDirectories(dir).ok());
  torch::NoGradGuard no_grad;
  for (int scale : {2, 3, 4}) {
    INFO("x" << scale);
    Result<ImportedNetwork> net =
        ImportNcnnNetwork(NcnnModelFile(scale, "param"), NcnnModelFile(scale, "bin"));
    REQUIRE_MESSAGE(net.ok(), net.status().message());
    int w = kLowWidth * scale, h = kLowHeight * scale;
    torch::Tensor original = Frames(dir, w, h, w, h);
    torch::Tensor low = Frames(dir, w, h, kLowWidth, kLowHeight);
    torch::Tensor model = net->module.forward({low}).toTensor();
    REQUIRE(model.sizes() == original.sizes());
    torch::Tensor bicubic = torch::upsample_bicubic2d(low, {h, w}, false);
    // The same network fed BGR (and its output turned back): what a swapped channel order does.
    torch::Tensor swapped = net->module.forward({low.flip(1)}).toTensor().flip(1);

    double model_db = Psnr(model, original), bicubic_db = Psnr(bicubic, original);
    double swapped_db = Psnr(swapped, original);
    std::printf("x%d: PSNR model %.2f dB, bicubic %.2f dB, model fed BGR %.2f dB\n", scale,
                model_db, bicubic_db, swapped_db);
    CHECK(model_db > kFloorDb);
    CHECK(model_db > bicubic_db - kMarginDb);
    CHECK(model_db > swapped_db);
    // Aligned: the output against the original, both cropped by 2 pixels, scores best unshifted.
    auto crop = [&](const torch::Tensor& t, int dy, int dx) {
      return t.slice(2, 2 + dy, h - 2 + dy).slice(3, 2 + dx, w - 2 + dx);
    };
    double aligned_db = Psnr(crop(model, 0, 0), crop(original, 0, 0));
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        if (dx == 0 && dy == 0) continue;
        INFO("output shifted by (" << dx << ", " << dy << ")");
        CHECK(Psnr(crop(model, dy, dx), crop(original, 0, 0)) < aligned_db);
      }
    }
    SaveStill({bicubic, model, original},
              std::string(FRAMEMILL_TEST_OUTPUT_DIR) + "/ncnn_quality_x" + std::to_string(scale) +
                  ".ppm");
  }
}
