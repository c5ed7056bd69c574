// The worker's frame conversion (worker/frame_convert.h), on the CPU and, with
// FRAMEMILL_TEST_DEVICE=cuda, on the GPU too: the same torch code on both.
#include "doctest_with_torch.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "torch_devices.h"
#include "worker/frame_convert.h"

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
    out.permute({0, 3, 1, 2}).copy_(ToOutputValues(x, FrameFormat::kRgb48));
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
    torch::Tensor back = ToOutputValues(b, FrameFormat::kRgb24).permute({0, 2, 3, 1});
    CHECK(torch::equal(back.to(torch::kUInt8).cpu(), v8.to(torch::kUInt8)));
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
