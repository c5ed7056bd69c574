// Face mode in the worker (worker/batch/face_composite.h, and BatchRunner in face mode): crops
// taken at the right place of the frame, the face model's output pasted back where the face was (at
// 1x and 2x), the feathered mask, pixels outside every face untouched to the bit, no model call for
// a batch without faces, and crops in calls of a fixed size. On the CPU, and with
// FRAMEMILL_TEST_DEVICE=cuda on the GPU too. The frames carry a linear pattern where values are
// compared: bilinear sampling reproduces a linear function exactly (inside the sampled image), so
// a crop or a paste off by a fraction of a pixel shows, to float rounding.
#include "doctest_with_torch.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "common/face_warp.h"
#include "example_model.h"
#include "torch_devices.h"
#include "worker/batch/batch_runner.h"
#include "worker/batch/face_composite.h"
#include "worker/model/frame_model.h"

using namespace framemill;

namespace {

constexpr int64_t kH = 120, kW = 160;  // frame size
constexpr int64_t kS = 64;             // crop side
constexpr double kPi = 3.14159265358979323846;
// Linear values sampled bilinearly, twice over, in float32.
constexpr double kLinearBound = 1e-4;

// Records the face model's inputs (on the CPU, float), then runs the real model.
class Recording : public FrameModel {
 public:
  explicit Recording(std::unique_ptr<FrameModel> inner) : inner_(std::move(inner)) {}
  Result<torch::Tensor> Run(const torch::Tensor& x) override {
    inputs.push_back(x.to(torch::kCPU, torch::kFloat32).clone());
    return inner_->Run(x);
  }
  const torch::Device& device() const override { return inner_->device(); }
  torch::ScalarType dtype() const override { return inner_->dtype(); }

  std::vector<torch::Tensor> inputs;

 private:
  std::unique_ptr<FrameModel> inner_;
};

// A face model written as a torch function of its input (float32).
class FunctionModel : public FrameModel {
 public:
  FunctionModel(std::function<torch::Tensor(const torch::Tensor&)> f, const torch::Device& device)
      : f_(std::move(f)), device_(device) {}
  Result<torch::Tensor> Run(const torch::Tensor& x) override { return f_(x); }
  const torch::Device& device() const override { return device_; }
  torch::ScalarType dtype() const override { return torch::kFloat32; }

 private:
  std::function<torch::Tensor(const torch::Tensor&)> f_;
  torch::Device device_;
};

// A 2x face model that upsamples bilinearly (align_corners=false): unlike upscale2x's nearest
// neighbours, its output is linear wherever its input is, off pixel centres too.
FunctionModel BilinearX2(const torch::Device& device) {
  return FunctionModel(
      [](const torch::Tensor& x) {
        namespace F = torch::nn::functional;
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .size(std::vector<int64_t>{x.size(2) * 2, x.size(3) * 2})
                                     .mode(torch::kBilinear)
                                     .align_corners(false));
      },
      device);
}

// The frame point (cx, cy) to the crop's centre, `scale` crop pixels per frame pixel, turned by
// `degrees`.
FaceWarp Similarity(double cx, double cy, double scale, double degrees) {
  const double t = degrees * kPi / 180.0, c = std::cos(t) * scale, s = std::sin(t) * scale;
  const double mid = (kS - 1) / 2.0;
  FaceWarp w{};
  const double m[6] = {c, s, mid - c * cx - s * cy, -s, c, mid + s * cx - c * cy};
  for (int i = 0; i < 6; ++i) w.to_crop[i] = static_cast<float>(m[i]);
  w.present = 1;
  return w;
}

FaceWarp Shift(float dx, float dy) {
  FaceWarp w{};
  const float m[6] = {1, 0, -dx, 0, 1, -dy};
  for (int i = 0; i < 6; ++i) w.to_crop[i] = m[i];
  w.present = 1;
  return w;
}

// For every frame pixel, its distance in crop pixels from the crop square's nearest edge (the
// pixel edges at -0.5 and kS - 0.5): positive inside. [kH, kW], double.
torch::Tensor EdgeDistance(const FaceWarp& w) {
  const torch::Tensor xs = torch::arange(kW, torch::kFloat64).view({1, kW});
  const torch::Tensor ys = torch::arange(kH, torch::kFloat64).view({kH, 1});
  const torch::Tensor u = xs * w.to_crop[0] + ys * w.to_crop[1] + w.to_crop[2];
  const torch::Tensor v = xs * w.to_crop[3] + ys * w.to_crop[4] + w.to_crop[5];
  return torch::min(torch::min(u + 0.5, kS - 0.5 - u), torch::min(v + 0.5, kS - 0.5 - v));
}

// The linear pattern at frame point (x, y), x and y tensors of any (equal) shape: [3, ...].
torch::Tensor Pattern(const torch::Tensor& x, const torch::Tensor& y) {
  return torch::stack({(x + 0.5) / kW, (y + 0.5) / kH, 0.2 + 0.3 * x / kW + 0.4 * y / kH});
}

// `n` frames of the linear pattern, float [n, 3, kH, kW].
torch::Tensor Ramps(int64_t n, const torch::Device& device) {
  const torch::Tensor xs = torch::arange(kW, torch::kFloat64).view({1, kW}).expand({kH, kW});
  const torch::Tensor ys = torch::arange(kH, torch::kFloat64).view({kH, 1}).expand({kH, kW});
  return Pattern(xs, ys).to(torch::kFloat32).unsqueeze(0).repeat({n, 1, 1, 1}).to(device);
}

FaceSettings Settings(int64_t slots, int64_t blend, int64_t per_call) {
  FaceSettings s;
  s.slots = slots;
  s.size = kS;
  s.blend = blend;
  s.per_call = per_call;
  return s;
}

torch::Tensor Cpu(const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat64); }

}  // namespace

TEST_CASE("face composite: outside every face's mask the output is the input, bit for bit") {
  for (const torch::Device& device : test::TorchTestDevices()) {
    torch::InferenceMode guard;
    torch::manual_seed(3);
    const torch::Tensor frames = torch::rand({2, 3, kH, kW}).to(device);
    // Frame 0: one face. Frame 1: two that overlap, the second past the frame's top-left corner.
    std::vector<FaceWarp> warps(6, FaceWarp{});
    warps[0] = Similarity(60, 50, 1.5, 25);
    warps[3] = Similarity(90, 60, 1.2, -10);
    warps[4] = Similarity(12, 9, 2.0, 40);
    std::unique_ptr<FrameModel> invert = test::ExampleModel("invert", device);
    FaceCompositor compositor(*invert, Settings(3, 6, 2));
    Result<torch::Tensor> out = compositor.Run(frames.clone(), warps.data(), 2);
    REQUIRE(out.ok());
    CHECK(compositor.stats().faces == 3);
    for (int64_t f = 0; f < 2; ++f) {
      torch::Tensor nearest = torch::full({kH, kW}, -1e9, torch::kFloat64);
      for (int64_t j = 0; j < 3; ++j) {
        const FaceWarp& w = warps[static_cast<size_t>(f * 3 + j)];
        if (w.present != 0) nearest = torch::max(nearest, EdgeDistance(w));
      }
      // Clear of every crop square (a band of 1e-3 crop pixels is left out: float32 against
      // double at the very edge).
      const torch::Tensor outside = (nearest < -1e-3).to(torch::kCPU).expand({3, kH, kW});
      const torch::Tensor in_f = frames[f].to(torch::kCPU), out_f = (*out)[f].to(torch::kCPU);
      INFO("frame " << f << " on " << device.str());
      CHECK(outside.sum().item<int64_t>() > 3 * kH * kW / 2);
      CHECK(torch::equal(out_f.masked_select(outside), in_f.masked_select(outside)));
      // Inside, the inverted face is there.
      const torch::Tensor inside = (nearest > 6.0).to(torch::kCPU).expand({3, kH, kW});
      const torch::Tensor changed = (out_f != in_f).masked_select(inside);
      CHECK(changed.to(torch::kFloat32).mean().item<float>() > 0.99f);
    }
  }
}

TEST_CASE("face composite: an invert face model gets the right crop, inverted in its place") {
  for (const torch::Device& device : test::TorchTestDevices()) {
    torch::InferenceMode guard;
    INFO("on " << device.str());
    const torch::Tensor frames = Ramps(1, device);
    const FaceWarp warp = Similarity(75.3, 58.6, 1.7, 30);  // turned, scaled, shifted
    constexpr int64_t kBlend = 8;
    Recording model(test::ExampleModel("invert", device));
    FaceCompositor compositor(model, Settings(1, kBlend, 1));
    Result<torch::Tensor> out = compositor.Run(frames.clone(), &warp, 1);
    REQUIRE(out.ok());

    // The crop: crop pixel (u, v) holds the pattern at inverse(to_crop) (u, v).
    REQUIRE(model.inputs.size() == 1);
    CHECK(model.inputs[0].sizes() == torch::IntArrayRef({1, 3, kS, kS}));
    const float* m = warp.to_crop;
    const double det = m[0] * m[4] - m[1] * m[3];
    const torch::Tensor us = torch::arange(kS, torch::kFloat64).view({1, kS}).expand({kS, kS});
    const torch::Tensor vs = torch::arange(kS, torch::kFloat64).view({kS, 1}).expand({kS, kS});
    const torch::Tensor du = us - m[2], dv = vs - m[5];
    const torch::Tensor x = (du * m[4] - dv * m[1]) / det, y = (dv * m[0] - du * m[3]) / det;
    const torch::Tensor want_crop = Pattern(x, y);
    CHECK((Cpu(model.inputs[0][0]) - want_crop).abs().max().item<double>() < kLinearBound);

    // The paste: 1 - frame where the mask is 1; the blend of both in the feather; the frame
    // outside.
    const torch::Tensor d = EdgeDistance(warp);
    const torch::Tensor in_f = Cpu(frames[0]), out_f = Cpu((*out)[0]);
    const torch::Tensor mask = (d / kBlend).clamp(0.0, 1.0);
    const torch::Tensor want = in_f * (1.0 - mask) + (1.0 - in_f) * mask;
    // Where the paste samples the crop's own pixels (half a pixel in from its edges), bilinear is
    // exact on the linear pattern.
    const torch::Tensor sampled_inside = (d >= 0.5).expand({3, kH, kW});
    const torch::Tensor err = (out_f - want).abs().masked_select(sampled_inside);
    CHECK(err.numel() > 3 * 500);
    CHECK(err.max().item<double>() < kLinearBound);
    const torch::Tensor deep = (d > kBlend).expand({3, kH, kW});
    CHECK(((out_f + in_f - 1.0).abs().masked_select(deep)).max().item<double>() < kLinearBound);
    const torch::Tensor outside = (d < -1e-3).expand({3, kH, kW});
    CHECK(torch::equal(out_f.masked_select(outside), in_f.masked_select(outside)));
  }
}

TEST_CASE("face composite: a bfloat16 model samples in float32 and leaves the rest untouched") {
  // The frames and the model in bfloat16 (8 bits of mantissa): the crops and the paste are still
  // sampled in float32, and the pixels outside the face keep their bfloat16 values exactly.
  torch::InferenceMode guard;
  const torch::Tensor frames = Ramps(1, torch::kCPU).to(torch::kBFloat16);
  const FaceWarp warp = Similarity(75.3, 58.6, 1.7, 30);
  std::unique_ptr<FrameModel> invert = test::ExampleModel("invert", torch::kCPU, torch::kBFloat16);
  FaceCompositor compositor(*invert, Settings(1, 4, 1));
  Result<torch::Tensor> out = compositor.Run(frames.clone(), &warp, 1);
  REQUIRE(out.ok());
  CHECK((out->scalar_type() == torch::kBFloat16));
  const torch::Tensor d = EdgeDistance(warp);
  const torch::Tensor in_f = Cpu(frames[0]), out_f = Cpu((*out)[0]);
  const torch::Tensor outside = (d < -1e-3).expand({3, kH, kW});
  CHECK(torch::equal(out_f.masked_select(outside), in_f.masked_select(outside)));
  const torch::Tensor deep = (d > 4.0).expand({3, kH, kW});
  // bfloat16 holds a value in [0.5, 1] to 1/256: the frame's and the result's rounding.
  CHECK(((out_f + in_f - 1.0).abs().masked_select(deep)).max().item<double>() < 2.0 / 256);
}

TEST_CASE("face composite: a 2x face model's output is pasted back where its face was") {
  for (const torch::Device& device : test::TorchTestDevices()) {
    torch::InferenceMode guard;
    INFO("on " << device.str());
    SUBCASE("upscale2x (nearest), a shifted crop: the frame comes back exactly") {
      // Frame pixels land on crop pixel centres, and the paste samples the 2x output midway
      // between the two equal copies of each: the random frame comes back to the float rounding
      // of grid_sample's normalised coordinates (a 1e-5 weight on a neighbour), so a paste one
      // pixel off would show.
      torch::manual_seed(5);
      const torch::Tensor frames = torch::rand({1, 3, kH, kW}).to(device);
      const FaceWarp warp = Shift(30, 20);
      Recording model(test::ExampleModel("upscale2x", device));
      FaceCompositor compositor(model, Settings(1, 0, 1));
      Result<torch::Tensor> out = compositor.Run(frames.clone(), &warp, 1);
      REQUIRE(out.ok());
      REQUIRE(model.inputs.size() == 1);
      const torch::Tensor in_f = Cpu(frames[0]), out_f = Cpu((*out)[0]);
      CHECK((out_f - in_f).abs().max().item<double>() < kLinearBound);
      // The crop was the frame's square at (30, 20).
      CHECK((Cpu(model.inputs[0][0]) - in_f.narrow(1, 20, kS).narrow(2, 30, kS))
                .abs()
                .max()
                .item<double>() < kLinearBound);
    }
    SUBCASE("bilinear 2x, a turned crop: the pattern comes back") {
      const torch::Tensor frames = Ramps(1, device);
      const FaceWarp warp = Similarity(81.2, 57.9, 1.4, -35);
      FunctionModel model = BilinearX2(device);
      FaceCompositor compositor(model, Settings(1, 0, 1));
      Result<torch::Tensor> out = compositor.Run(frames.clone(), &warp, 1);
      REQUIRE(out.ok());
      // Away from the crop's edges, where the 2x output's own edge handling stops being linear.
      const torch::Tensor inner = (EdgeDistance(warp) > 2.0).expand({3, kH, kW});
      const torch::Tensor err = (Cpu((*out)[0]) - Cpu(frames[0])).abs().masked_select(inner);
      CHECK(err.numel() > 3 * 1000);
      CHECK(err.max().item<double>() < kLinearBound);
    }
  }
}

TEST_CASE("face composite: a batch without faces makes no face model call") {
  torch::InferenceMode guard;
  const torch::Tensor frames = torch::rand({2, 3, kH, kW});
  std::vector<FaceWarp> warps(4, FaceWarp{});  // none present
  warps[1].to_crop[0] = 1.0f;                  // (a stale entry, not present)
  Recording model(test::ExampleModel("identity", torch::kCPU));
  FaceCompositor compositor(model, Settings(2, 4, 2));
  Result<torch::Tensor> out = compositor.Run(frames.clone(), warps.data(), 2);
  REQUIRE(out.ok());
  CHECK(model.inputs.empty());
  CHECK(compositor.stats().model_calls == 0);
  CHECK(torch::equal(*out, frames));
  // Padding rows only (frames_with_faces 0): no warp is read.
  REQUIRE(compositor.Run(frames.clone(), nullptr, 0).ok());
  CHECK(model.inputs.empty());
}

TEST_CASE("face composite: crops go to the face model in calls of a fixed size, the last padded") {
  torch::InferenceMode guard;
  torch::manual_seed(11);
  // Four frames; the warps of the first three: 2, 0 and 3 faces (slots of 3). The fourth is a
  // padding row of a short batch: no warps for it.
  const torch::Tensor frames = torch::rand({4, 3, kH, kW});
  std::vector<FaceWarp> warps(9, FaceWarp{});
  warps[0] = Similarity(50, 50, 1.0, 0);
  warps[1] = Similarity(110, 70, 1.5, 10);
  warps[6] = Similarity(40, 40, 2.0, 5);
  warps[7] = Similarity(80, 60, 1.1, -20);
  warps[8] = Similarity(120, 80, 1.6, 45);
  auto run = [&](int64_t per_call, std::vector<torch::Tensor>* inputs) {
    Recording model(test::ExampleModel("invert", torch::kCPU));
    FaceCompositor compositor(model, Settings(3, 4, per_call));
    Result<torch::Tensor> out = compositor.Run(frames.clone(), warps.data(), 3);
    REQUIRE(out.ok());
    CHECK(compositor.stats().faces == 5);
    CHECK(compositor.stats().model_calls == static_cast<int64_t>(model.inputs.size()));
    *inputs = model.inputs;
    return *out;
  };
  std::vector<torch::Tensor> twos, fives;
  const torch::Tensor by_two = run(2, &twos);
  const torch::Tensor by_five = run(5, &fives);
  REQUIRE(twos.size() == 3);
  for (const torch::Tensor& in : twos) CHECK(in.sizes() == torch::IntArrayRef({2, 3, kS, kS}));
  CHECK(torch::equal(twos[2][1], torch::zeros({3, kS, kS})));  // the padding crop
  REQUIRE(fives.size() == 1);
  CHECK(fives[0].sizes() == torch::IntArrayRef({5, 3, kS, kS}));
  // The same crops in the same order, however they are grouped.
  CHECK(torch::equal(torch::cat({twos[0], twos[1], twos[2].narrow(0, 0, 1)}), fives[0]));
  CHECK(torch::equal(by_two, by_five));
  CHECK(torch::equal(by_two[1], frames[1]));  // no faces
  CHECK(torch::equal(by_two[3], frames[3]));  // a padding row
  CHECK_FALSE(torch::equal(by_two[2], frames[2]));
}

TEST_CASE("face composite: a warp with no inverse and a face model of the wrong shape are errors") {
  torch::InferenceMode guard;
  const torch::Tensor frames = torch::rand({1, 3, kH, kW});
  std::unique_ptr<FrameModel> identity = test::ExampleModel("identity", torch::kCPU);
  FaceWarp flat = Similarity(60, 60, 1.0, 0);
  flat.to_crop[4] = 0.0f;  // v no longer depends on y: the map squashes the frame to a line
  FaceCompositor compositor(*identity, Settings(1, 0, 1));
  Result<torch::Tensor> bad_warp = compositor.Run(frames.clone(), &flat, 1);
  REQUIRE_FALSE(bad_warp.ok());
  CHECK(bad_warp.status().code() == StatusCode::kInternal);

  // One row short of the crop's side.
  FunctionModel cropping([](const torch::Tensor& x) { return x.narrow(2, 0, x.size(2) - 1); },
                         torch::kCPU);
  const FaceWarp warp = Similarity(60, 60, 1.0, 0);
  FaceCompositor with_cropping(cropping, Settings(1, 0, 1));
  Result<torch::Tensor> bad_shape = with_cropping.Run(frames.clone(), &warp, 1);
  REQUIRE_FALSE(bad_shape.ok());
  CHECK(bad_shape.status().code() == StatusCode::kModelInvalid);
}

TEST_CASE("batch runner: face mode composites between the frame conversions") {
  // Five rgb24 frames, each one flat colour, in batches of 2 (the last one short); faces in
  // frames 0 (one), 1 (two) and 4 (one). Inside a face the invert model's colour, 255 - c, to the
  // level; outside every face the input's bytes exactly. A frame given another frame's warps
  // (a wrong offset into the chunk's FaceWarps) would fail both.
  constexpr int64_t kFrames = 5, kSlots = 2, kBlend = 4;
  const int64_t frame_bytes = kH * kW * 3;
  std::vector<uint8_t> in(static_cast<size_t>(kFrames * frame_bytes));
  std::vector<uint8_t> out(in.size(), 0);
  for (int64_t f = 0; f < kFrames; ++f) {
    std::fill(in.begin() + f * frame_bytes, in.begin() + (f + 1) * frame_bytes,
              static_cast<uint8_t>(30 + 40 * f));
  }
  std::vector<FaceWarp> warps(kFrames * kSlots, FaceWarp{});
  warps[0] = Similarity(40, 40, 1.5, 15);
  warps[2] = Similarity(110, 50, 1.2, -30);
  warps[3] = Similarity(60, 80, 2.0, 60);
  warps[8] = Similarity(130, 90, 1.8, 0);
  // On CUDA the chunk's short last batch runs padded to the full batch: its padding row has no
  // warps and no face.
  for (const torch::Device& device : test::TorchTestDevices()) {
    INFO("on " << device.str());
    std::fill(out.begin(), out.end(), 0);
    Recording model(test::ExampleModel("invert", device));
    BatchRunner runner(model);
    ChunkFrames c;
    c.in = in.data();
    c.out = out.data();
    c.frames = kFrames;
    c.batch = 2;
    c.layout.format = FrameFormat::kRgb24;
    c.layout.height = kH;
    c.layout.width = kW;
    c.out_h = kH;
    c.out_w = kW;
    c.face = Settings(kSlots, kBlend, 2);
    c.faces = warps.data();
    const Status ran = runner.Run(
        c, [](int64_t, int64_t) {}, [](int64_t) {});
    REQUIRE(ran.ok());
    // Batch 0 has three faces (two calls), batch 1 none, batch 2 one: three calls of two crops.
    REQUIRE(model.inputs.size() == 3);
    for (const torch::Tensor& x : model.inputs) {
      CHECK(x.sizes() == torch::IntArrayRef({2, 3, kS, kS}));
    }
    const torch::Tensor got =
        torch::from_blob(out.data(), {kFrames, kH, kW, 3}, torch::kUInt8).to(torch::kInt32);
    for (int64_t f = 0; f < kFrames; ++f) {
      INFO("frame " << f);
      torch::Tensor nearest = torch::full({kH, kW}, -1e9, torch::kFloat64);
      for (int64_t j = 0; j < kSlots; ++j) {
        const FaceWarp& w = warps[static_cast<size_t>(f * kSlots + j)];
        if (w.present != 0) nearest = torch::max(nearest, EdgeDistance(w));
      }
      const int colour = 30 + 40 * static_cast<int>(f);
      const torch::Tensor pixels = got[f].permute({2, 0, 1});  // [3, kH, kW]
      const torch::Tensor outside = (nearest < -1e-3).expand({3, kH, kW});
      CHECK((pixels.masked_select(outside) == colour).all().item<bool>());
      const torch::Tensor inside = (nearest > kBlend).expand({3, kH, kW});
      if (f == 2 || f == 3) {
        CHECK(inside.sum().item<int64_t>() == 0);
      } else {
        CHECK(inside.sum().item<int64_t>() > 3 * 500);
        CHECK(((pixels.masked_select(inside) - (255 - colour)).abs() <= 1).all().item<bool>());
      }
    }
  }
}
