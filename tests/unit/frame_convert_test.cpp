// The worker's frame conversion (worker/batch/frame_convert.h), on the CPU and, with
// FRAMEMILL_TEST_DEVICE=cuda, on the GPU too: the same torch code on both.
#include "doctest_with_torch.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "torch_devices.h"
#include "worker/batch/frame_convert.h"
#include "worker/batch/frame_convert_cpu.h"

using namespace framemill;

namespace {

std::vector<torch::Device> Devices() { return test::TorchTestDevices(); }

// Every 16-bit value once, as rgb48 frames of 64x64 (4096 pixels * 3 = 12288 samples per frame,
// 6 frames hold 65536 values and more).
torch::Tensor AllValuesRgb48(int64_t* frames) {
  const int64_t h = 64, w = 64;
  *frames = 6;
  torch::Tensor v = torch::arange(*frames * h * w * 3, torch::kInt64).remainder(65536);
  // int16 bits of each uint16 value, then viewed as bytes: what the arena holds.
  torch::Tensor bits = torch::where(v > 32767, v - 65536, v).to(torch::kInt16);
  return bits.view(torch::kUInt8).view({*frames, h * w * 6}).clone();
}

}  // namespace

TEST_CASE("frame convert: every 16-bit value survives rgb48 -> float -> rgb48 unchanged") {
  for (const torch::Device& device : Devices()) {
    INFO("device " << device.str());
    int64_t n = 0;
    torch::Tensor frames = AllValuesRgb48(&n).to(device);
    InputLayout in;
    in.format = FrameFormat::kRgb48;
    in.height = 64;
    in.width = 64;
    REQUIRE(in.FrameBytes() == 64 * 64 * 6);
    torch::Tensor x = ToModelInput(frames, in, torch::kFloat32);
    CHECK(x.sizes() == torch::IntArrayRef({n, 3, 64, 64}));
    CHECK(x.min().item<float>() == 0.0f);
    CHECK(x.max().item<float>() == 1.0f);
    torch::Tensor out = torch::empty(
        {n, 64, 64, 3}, torch::TensorOptions().device(device).dtype(OutputElementType(in.format)));
    WriteOutputFrames(x, out, FrameFormat::kRgb48);
    CHECK(torch::equal(out.view(torch::kUInt8).view({n, -1}).cpu(), frames.cpu()));
  }
}

TEST_CASE("frame convert: an 8-bit and a 16-bit picture reach the model with the same values") {
  for (const torch::Device& device : Devices()) {
    INFO("device " << device.str());
    torch::Tensor v8 = torch::arange(256 * 3, torch::kInt64).remainder(256).view({1, 16, 16, 3});
    torch::Tensor v16 = v8 * 257;  // the same levels at 16 bits (x/255 == 257x/65535)
    torch::Tensor bytes8 = v8.to(torch::kUInt8).view({1, -1}).to(device);
    torch::Tensor bytes16 = torch::where(v16 > 32767, v16 - 65536, v16)
                                .to(torch::kInt16)
                                .view(torch::kUInt8)
                                .view({1, -1})
                                .to(device);
    InputLayout in8;
    in8.height = 16;
    in8.width = 16;
    InputLayout in16 = in8;
    in16.format = FrameFormat::kRgb48;
    torch::Tensor a = ToModelInput(bytes8, in8, torch::kFloat32);
    torch::Tensor b = ToModelInput(bytes16, in16, torch::kFloat32);
    CHECK((a - b).abs().max().item<float>() < 1e-6f);
    // And back: 8-bit output of the 16-bit input gives the 8-bit levels.
    torch::Tensor back = torch::empty({1, 16, 16, 3}, bytes8.options());
    WriteOutputFrames(b, back, FrameFormat::kRgb24);
    CHECK(torch::equal(back.cpu(), v8.to(torch::kUInt8)));
  }
}

TEST_CASE("frame convert: 4:2:0 chroma is repeated over its 2x2 block") {
  // A grey frame whose top-left chroma sample is blue-ish: exactly the 2x2 block changes.
  const int64_t h = 4, w = 4;
  torch::Tensor f = torch::full({1, h * w + 2 * 2 * 2}, 128, torch::kUInt8);
  f.narrow(1, 0, h * w).fill_(126);
  f[0][h * w] = 200;  // U of the top-left block
  InputLayout in;
  in.format = FrameFormat::kYuv420p;
  in.height = h;
  in.width = w;
  torch::Tensor rgb = ToModelInput(f, in, torch::kFloat32)[0];
  torch::Tensor blue = rgb[2];
  CHECK(blue[0][0].item<float>() == doctest::Approx(blue[1][1].item<float>()));
  CHECK(blue[0][1].item<float>() == doctest::Approx(blue[1][0].item<float>()));
  CHECK(blue[0][0].item<float>() > blue[0][2].item<float>() + 0.3f);
  CHECK(blue[2][0].item<float>() == doctest::Approx(blue[3][3].item<float>()));
}

namespace {

InputLayout YuvLayout(int64_t h, int64_t w, YuvMatrix m, bool full) {
  InputLayout in;
  in.format = FrameFormat::kYuv420p;
  in.height = h;
  in.width = w;
  in.matrix = m;
  in.full_range = full;
  return in;
}

// ffmpeg's arithmetic for one limited- or full-range sample, in double: the reference the
// worker's float matrix product must stay within float rounding of.
void ReferenceRgb(double y, double u, double v, YuvMatrix m, bool full, double rgb[3]) {
  double kr = 0, kb = 0;
  MatrixWeights(m, &kr, &kb);
  const double kg = 1 - kr - kb;
  const double yn = full ? y / 255 : (y - 16) / 219;
  const double cb = full ? (u - 128) / 255 : (u - 128) / 224;
  const double cr = full ? (v - 128) / 255 : (v - 128) / 224;
  rgb[0] = yn + 2 * (1 - kr) * cr;
  rgb[1] = yn - 2 * kb * (1 - kb) / kg * cb - 2 * kr * (1 - kr) / kg * cr;
  rgb[2] = yn + 2 * (1 - kb) * cb;
  for (int c = 0; c < 3; ++c) rgb[c] = std::min(1.0, std::max(0.0, rgb[c]));
}

}  // namespace

TEST_CASE("frame convert: yuv420p of odd and even sizes, every matrix and range, as the formula") {
  for (const torch::Device& device : Devices()) {
    for (auto [h, w] : {std::pair<int64_t, int64_t>{6, 8}, {5, 7}, {3, 2}}) {
      for (YuvMatrix m : {YuvMatrix::kBt601, YuvMatrix::kBt709, YuvMatrix::kBt2020}) {
        for (bool full : {false, true}) {
          INFO("device " << device.str() << ", " << w << "x" << h << ", matrix "
                         << static_cast<int>(m) << ", " << std::string(full ? "full" : "limited"));
          const InputLayout in = YuvLayout(h, w, m, full);
          const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2, b = 2;
          torch::Tensor f = torch::randint(0, 256, {b, in.FrameBytes()}, torch::kUInt8);
          torch::Tensor rgb = ToModelInput(f.to(device), in, torch::kFloat32).cpu();
          REQUIRE(rgb.sizes() == torch::IntArrayRef({b, 3, h, w}));
          CHECK(rgb.is_contiguous(torch::MemoryFormat::ChannelsLast));
          auto bytes = f.accessor<uint8_t, 2>();
          auto got = rgb.accessor<float, 4>();
          double worst = 0;
          for (int64_t i = 0; i < b; ++i) {
            for (int64_t r = 0; r < h; ++r) {
              for (int64_t c = 0; c < w; ++c) {
                const int64_t k = (r / 2) * cw + c / 2;
                double want[3];
                ReferenceRgb(bytes[i][r * w + c], bytes[i][h * w + k],
                             bytes[i][h * w + cw * ch + k], m, full, want);
                for (int p = 0; p < 3; ++p) {
                  worst = std::max(worst, std::abs(got[i][p][r][c] - want[p]));
                }
              }
            }
          }
          CHECK(worst < 1e-5);  // float rounding; a level is 1/255 = 0.0039
          // In the model's 16-bit types: the float values, rounded once.
          for (torch::ScalarType t : {torch::kBFloat16, torch::kFloat16}) {
            if (t == torch::kFloat16 && device.is_cpu()) continue;  // refused there
            torch::Tensor narrow = ToModelInput(f.to(device), in, t);
            CHECK((narrow.scalar_type() == t));
            CHECK(narrow.is_contiguous(torch::MemoryFormat::ChannelsLast));
            CHECK(torch::equal(narrow.cpu(), rgb.to(t)));
          }
        }
      }
    }
  }
}

TEST_CASE("frame convert: 8-bit output is y * 255 to the nearest level, clamped, for every type") {
  for (const torch::Device& device : Devices()) {
    // For each level, the model's output a quarter below, just below and just above the half-way
    // point to the next, and out of range on both sides.
    std::vector<float> y;
    std::vector<uint8_t> want;
    for (int k = 0; k < 255; ++k) {
      y.insert(y.end(), {(k + 0.25f) / 255, (k + 0.49f) / 255, (k + 0.51f) / 255});
      want.insert(want.end(),
                  {static_cast<uint8_t>(k), static_cast<uint8_t>(k), static_cast<uint8_t>(k + 1)});
    }
    y.insert(y.end(), {-3.0f, -0.001f, 1.001f, 7.0f, 0.0f, 1.0f});
    want.insert(want.end(), {0, 0, 255, 255, 0, 255});
    const int64_t n = static_cast<int64_t>(y.size());  // 771: 257 pixels of 3 colours
    torch::Tensor values = torch::tensor(y).view({1, n / 3, 1, 3}).permute({0, 3, 1, 2});
    torch::Tensor expected = torch::tensor(want, torch::kUInt8).view({1, n / 3, 1, 3});
    for (torch::ScalarType t : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
      INFO("device " << device.str() << ", type " << t);
      if (t == torch::kFloat16 && device.is_cpu()) continue;  // the worker refuses fp16 there
      torch::Tensor dst = torch::empty({1, n / 3, 1, 3}, torch::kUInt8).to(device);
      WriteOutputFrames(values.to(device).to(t), dst, FrameFormat::kRgb24);
      if (t == torch::kFloat32) {
        CHECK(torch::equal(dst.cpu(), expected));
      } else {
        // In 16 bits the values themselves move: the level is the one of the value as stored
        // (computed here in double; in float it is exact too, a 16-bit value times 255 having
        // at most 19 significant bits).
        torch::Tensor rounded = values.to(t)
                                    .to(torch::kFloat64)
                                    .clamp(0, 1)
                                    .mul(255)
                                    .add(0.5)
                                    .floor()
                                    .to(torch::kUInt8)
                                    .permute({0, 2, 3, 1});
        CHECK(torch::equal(dst.cpu(), rounded));
      }
    }
  }
}

namespace {

// yuv420p layouts of odd and even sizes, three matrices and both ranges.
std::vector<InputLayout> YuvLayouts() {
  std::vector<InputLayout> layouts;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{6, 8}, {5, 7}, {2, 2}}) {
    for (YuvMatrix m : {YuvMatrix::kBt601, YuvMatrix::kBt709, YuvMatrix::kBt2020}) {
      for (bool full : {false, true}) {
        layouts.push_back(YuvLayout(h, w, m, full));
      }
    }
  }
  return layouts;
}

}  // namespace

TEST_CASE("frame convert: yuv420p -> unclamped float RGB -> yuv420p gives every plane back") {
  // Random planes are mostly outside the RGB cube: kept unclamped, the float round trip returns
  // each level (the identity pass then costs only the encoder); clamped, it cannot.
  for (const torch::Device& device : Devices()) {
    for (InputLayout in : YuvLayouts()) {
      INFO("device " << device.str() << ", " << in.width << "x" << in.height << ", matrix "
                     << static_cast<int>(in.matrix) << (in.full_range ? ", full" : ", limited"));
      const int64_t b = 3;
      torch::Tensor f = torch::randint(0, 256, {b, in.FrameBytes()}, torch::kUInt8);
      const std::vector<int64_t> shape =
          OutputFramesShape(FrameFormat::kYuv420p, b, in.height, in.width);
      CHECK(shape == std::vector<int64_t>{b, in.FrameBytes()});
      torch::Tensor back = torch::empty(shape, f.options().device(device));
      in.unclamped = true;
      WriteOutputFrames(ToModelInput(f.to(device), in, torch::kFloat32), back,
                        FrameFormat::kYuv420p, in);
      CHECK(torch::equal(back.cpu(), f));
      in.unclamped = false;
      torch::Tensor clamped = ToModelInput(f.to(device), in, torch::kFloat32);
      CHECK(clamped.min().item<float>() >= 0.0f);
      CHECK(clamped.max().item<float>() <= 1.0f);
      WriteOutputFrames(clamped, back, FrameFormat::kYuv420p, in);
      CHECK_FALSE(torch::equal(back.cpu(), f));
    }
  }
}

TEST_CASE("frame convert: the CPU loops give the tensor code's values, both ways, every layout") {
  // Layouts of odd and even sizes (a wider one so that rows split between threads), clamped and
  // not; model outputs with values outside [0, 1], NaN, and both memory layouts.
  std::vector<InputLayout> layouts = YuvLayouts();
  layouts.push_back(YuvLayout(37, 130, YuvMatrix::kBt709, false));
  for (InputLayout yuv : std::vector<InputLayout>(layouts)) {
    InputLayout rgb = yuv;
    rgb.format = FrameFormat::kRgb24;
    layouts.push_back(rgb);
  }
  for (InputLayout in : layouts) {
    for (bool unclamped : {false, true}) {
      if (unclamped && in.format != FrameFormat::kYuv420p) continue;
      in.unclamped = unclamped;
      INFO(in.width << "x" << in.height << ", format " << static_cast<int>(in.format) << ", matrix "
                    << static_cast<int>(in.matrix)
                    << std::string(in.full_range ? ", full" : ", limited")
                    << std::string(unclamped ? ", unclamped" : ""));
      const int64_t b = 3;
      torch::Tensor f = torch::randint(0, 256, {b, in.FrameBytes()}, torch::kUInt8);
      for (torch::ScalarType t : {torch::kFloat32, torch::kBFloat16}) {
        torch::Tensor loops;
        const bool covered = ToModelInputOnCpu(f, in, t, &loops);
        CHECK(covered == (t == torch::kFloat32 || in.format == FrameFormat::kYuv420p));
        if (!covered) continue;
        torch::Tensor ops = ToModelInputAsTensorOps(f, in, t);
        CHECK((loops.scalar_type() == t));
        CHECK(loops.sizes() == ops.sizes());
        CHECK(loops.is_contiguous(torch::MemoryFormat::ChannelsLast));
        CHECK(torch::equal(loops, ops));
      }
      torch::Tensor y = torch::rand({b, in.height, in.width, 3}).mul_(1.4).sub_(0.2);
      y[0][0][0][0] = std::nanf("");
      for (torch::Tensor model_out : {y.permute({0, 3, 1, 2}), y.permute({0, 3, 1, 2}).contiguous(),
                                      y.permute({0, 3, 1, 2}).to(torch::kBFloat16)}) {
        const std::vector<int64_t> shape = OutputFramesShape(in.format, b, in.height, in.width);
        torch::Tensor by_loops = torch::full(shape, 7, torch::kUInt8);
        torch::Tensor by_ops = torch::full(shape, 9, torch::kUInt8);
        CHECK(WriteOutputFramesOnCpu(model_out, by_loops, in.format, in));
        WriteOutputFramesAsTensorOps(model_out, by_ops, in.format, in);
        // The NaN's pixel is left out: the tensor code's float-to-uint8 copy of NaN is undefined.
        by_ops.view({b, -1})[0][0] = by_loops.view({b, -1})[0][0];
        if (in.format == FrameFormat::kYuv420p) {  // its block's chroma too
          by_ops[0][in.height * in.width] = by_loops[0][in.height * in.width];
          const int64_t v = in.height * in.width + ((in.height + 1) / 2) * ((in.width + 1) / 2);
          by_ops[0][v] = by_loops[0][v];
        } else {
          by_ops[0][0][0] = by_loops[0][0][0];
        }
        CHECK(torch::equal(by_loops, by_ops));
      }
    }
  }
}
