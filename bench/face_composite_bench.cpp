// framemill-face-bench: what face mode's compositor (worker/batch/face_composite.h) costs per face,
// the face model's own time taken out: cropping, and pasting through the feathered mask.
// The face model is one that returns its input (its calls are timed and subtracted all the same).
// The batch is composited in place, as BatchRunner hands it over.
// Frames of random values, faces turned and scaled at random spots, all inside the frame.
//
// usage: framemill-face-bench [--device cpu|cuda] [--size WxH] [--face S] [--blend B]
//                             [--frames N] [--faces-per-frame F,...] [--repeat R] [--dtype fp16]
// defaults: cpu, 1920x1080, S 512, B 16, N 4 frames a batch, F 0,1,2,4, R 5, fp32. Prints, per F,
// the best of R runs: ms per batch, and ms per face over the batch without faces.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "common/face_warp.h"
#include "worker/batch/face_composite.h"
#include "worker/model/frame_model.h"

using namespace framemill;

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Returns its input; times its calls (the device finished before and after).
class TimedIdentity : public FrameModel {
 public:
  TimedIdentity(const torch::Device& device, torch::ScalarType dtype)
      : device_(device), dtype_(dtype) {}
  Result<torch::Tensor> Run(const torch::Tensor& x) override {
    const Clock::time_point t0 = Clock::now();
    (void)x.sum().item<float>();
    spent_ms += Ms(Clock::now() - t0);
    return x;
  }
  const torch::Device& device() const override { return device_; }
  torch::ScalarType dtype() const override { return dtype_; }
  double spent_ms = 0;

 private:
  torch::Device device_;
  torch::ScalarType dtype_;
};

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "cpu";
  bool half = false;
  int64_t w = 1920, h = 1080, size = 512, blend = 16, frames = 4, repeat = 5;
  std::vector<int> per_frame = {0, 1, 2, 4};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--device") {
      device_name = value;
    } else if (key == "--size") {
      if (std::sscanf(value.c_str(), "%ldx%ld", &w, &h) != 2) return 2;
    } else if (key == "--face") {
      size = std::atol(value.c_str());
    } else if (key == "--blend") {
      blend = std::atol(value.c_str());
    } else if (key == "--frames") {
      frames = std::atol(value.c_str());
    } else if (key == "--faces-per-frame") {
      per_frame = ParseList(value);
    } else if (key == "--dtype") {
      half = value == "fp16";
    } else if (key == "--repeat") {
      repeat = std::atol(value.c_str());
    } else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  torch::InferenceMode guard;
  const torch::Device device(device_name);
  const torch::ScalarType dtype = half ? torch::kHalf : torch::kFloat32;
  std::printf(
      "face compositor on %s: %ldx%ld frames, %ld a batch, crops %ld, blend %ld, %s, %d threads\n",
      device.str().c_str(), w, h, frames, size, blend, half ? "fp16" : "fp32",
      torch::get_num_threads());
  const torch::Tensor batch = torch::rand({frames, 3, h, w})
                                  .to(device, dtype)
                                  .contiguous(torch::MemoryFormat::ChannelsLast);
  std::mt19937 rng(1);
  double base_ms = 0;
  for (int f : per_frame) {
    std::vector<FaceWarp> warps(static_cast<size_t>(frames * std::max(f, 1)), FaceWarp{});
    for (int64_t n = 0; n < frames; ++n) {
      for (int j = 0; j < f; ++j) {
        // A face of 150..400 frame pixels, turned up to 30 degrees, inside the frame.
        const double side = std::uniform_real_distribution<double>(150, 400)(rng);
        const double scale = static_cast<double>(size) / side;
        const double t = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
        const double cx = std::uniform_real_distribution<double>(side, w - side)(rng);
        const double cy = std::uniform_real_distribution<double>(side, h - side)(rng);
        const double c = std::cos(t) * scale, s = std::sin(t) * scale, mid = (size - 1) / 2.0;
        FaceWarp& fw = warps[static_cast<size_t>(n * f + j)];
        const double m[6] = {c, s, mid - c * cx - s * cy, -s, c, mid + s * cx - c * cy};
        for (int i = 0; i < 6; ++i) fw.to_crop[i] = static_cast<float>(m[i]);
        fw.present = 1;
      }
    }
    FaceSettings settings;
    settings.slots = std::max(f, 1);
    settings.size = size;
    settings.blend = blend;
    settings.per_call = frames;
    double best = 1e30;
    for (int64_t r = 0; r < repeat; ++r) {
      TimedIdentity model(device, dtype);
      FaceCompositor compositor(model, settings);
      torch::Tensor work = batch.clone();  // composited in place
      (void)work.sum().item<float>();
      const Clock::time_point t0 = Clock::now();
      Result<torch::Tensor> out = compositor.Run(work, warps.data(), frames);
      if (!out.ok()) {
        std::fprintf(stderr, "%s\n", out.status().message().c_str());
        return 1;
      }
      (void)out->sum().item<float>();  // the device has finished
      best = std::min(best, Ms(Clock::now() - t0) - model.spent_ms);
    }
    if (f == 0) base_ms = best;
    const int64_t faces = frames * f;
    std::printf("%d faces a frame: %.1f ms a batch", f, best);
    if (faces > 0) std::printf(", %.1f ms a face", (best - base_ms) / static_cast<double>(faces));
    std::printf("\n");
  }
  return 0;
}
