// Tiles and out-of-memory fallbacks inside the worker (worker/model/tile_grid.h,
// worker/model/tiled_model.h): the grid's arithmetic, tiled output against whole-frame output of
// the example models (on the CPU and, with FRAMEMILL_TEST_DEVICE=cuda, on the GPU too), and the
// fallback steps driven by the test fault's out-of-memory error (tests/faults/oom_fault_model.h),
// which is the error type CUDA raises.
#include "doctest_with_torch.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <torch/torch.h>

#include "example_model.h"
#include "tests/faults/oom_fault_model.h"
#include "torch_devices.h"
#include "worker/model/example_models.h"
#include "worker/model/frame_model.h"
#include "worker/model/tile_grid.h"
#include "worker/model/tiled_model.h"

using namespace framemill;

namespace {

// Tiled and whole-frame outputs agree to this, in [0, 1] (tiled_model.h: float rounding of
// another convolution shape). On CUDA, cuDNN picks its algorithm by shape, so a tile and the
// whole frame round differently: `restore` differed by 5.3e-5 on an H200, a 75th of an 8-bit
// level. The CUDA bound is still ten times under what too small an overlap gives on the CPU
// (the test after this one).
constexpr float kTileBound = 1e-5f;
constexpr float kCudaTileBound = 1e-4f;

float TileBound(const torch::Device& device) {
  return device.is_cuda() ? kCudaTileBound : kTileBound;
}

std::vector<torch::Device> Devices() { return test::TorchTestDevices(); }

std::unique_ptr<FrameModel> Example(const std::string& name, const torch::Device& device) {
  return test::ExampleModel(name, device);
}

TileSetting Fixed(int size, int overlap) { return {TileMode::kFixed, size, overlap}; }

torch::Tensor Frames(int64_t n, int64_t h, int64_t w, const torch::Device& device) {
  torch::manual_seed(7);
  return torch::rand({n, 3, h, w}).to(device);
}

// The largest difference between the model run whole and through `tile`.
float TiledDifference(const std::string& name, const TileSetting& tile, const torch::Tensor& x) {
  torch::InferenceMode guard;
  std::unique_ptr<FrameModel> whole = Example(name, x.device());
  TiledModel tiled(Example(name, x.device()), tile, name);
  Result<torch::Tensor> a = whole->Run(x);
  Result<torch::Tensor> b = tiled.Run(x);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->sizes() == b->sizes());
  CHECK(tiled.fallbacks().events == 0);
  const float d = (*a - *b).abs().max().item<float>();
  MESSAGE(name << " on " << x.device().str() << ", tiles " << Name(tile) << ": " << d);
  return d;
}

}  // namespace

TEST_CASE("tile grid: the write ranges partition the side, each inside its tile's overlaps") {
  for (int64_t size : {64, 72, 100, 128}) {
    for (int64_t overlap : {0, 1, 16, 20}) {
      if (size < 2 * overlap + 32) continue;
      for (int64_t length = 1; length <= 700; ++length) {
        const std::vector<TileSpan> spans = TileAxis(length, size, overlap);
        INFO("length " << length << " size " << size << " overlap " << overlap);
        REQUIRE(!spans.empty());
        const int64_t extent = TileExtent(length, size);
        int64_t next = 0;
        for (size_t i = 0; i < spans.size(); ++i) {
          const TileSpan& s = spans[i];
          CHECK(s.start >= 0);
          CHECK(s.start + extent <= length);  // no padding beyond the frame
          CHECK(s.write_begin == next);       // contiguous, in order
          CHECK(s.write_end > s.write_begin);
          // Each written pixel has `overlap` real pixels on an inner side, or the frame's edge.
          CHECK(s.write_begin >= (i == 0 ? 0 : s.start + overlap));
          CHECK(s.write_end <= (i + 1 == spans.size() ? length : s.start + extent - overlap));
          next = s.write_end;
        }
        CHECK(next == length);
        if (length <= size) CHECK(spans.size() == 1);
        if (length > size) CHECK(spans.back().start == length - size);  // aligned to the edge
      }
    }
  }
}

TEST_CASE("tile grid: edge cases") {
  // A side no longer than a tile: one tile of the whole side.
  CHECK(TileAxis(64, 64, 16).size() == 1);
  CHECK(TileAxis(10, 64, 16)[0].write_end == 10);
  CHECK(TileExtent(10, 64) == 10);
  // One pixel over: two tiles, the second moved back to the edge.
  std::vector<TileSpan> two = TileAxis(65, 64, 16);
  REQUIRE(two.size() == 2);
  CHECK(two[1].start == 1);
  CHECK(two[0].write_end == 48);
  // An exact fit of the step: tiles start every size - 2 * overlap.
  std::vector<TileSpan> grid = TileAxis(64 + 32 * 3, 64, 16);
  REQUIRE(grid.size() == 4);
  CHECK(grid[1].start == 32);
  CHECK(grid[3].start == 96);
}

TEST_CASE("tiled model: equals the whole frame for sharpen, upscale2x and restore") {
  for (const torch::Device& device : Devices()) {
    INFO("device " << device.str());
    // Odd frame sizes, tiles that do not divide them, overlap >= each receptive field (sharpen
    // and upscale2x: 1 pixel; restore: 18).
    const float bound = TileBound(device);
    CHECK(TiledDifference("sharpen", Fixed(64, 2), Frames(2, 101, 157, device)) <= bound);
    CHECK(TiledDifference("upscale2x", Fixed(64, 2), Frames(2, 99, 131, device)) <= bound);
    CHECK(TiledDifference("restore", Fixed(72, 20), Frames(1, 75, 97, device)) <= bound);
  }
}

TEST_CASE("tiled model: an overlap under the receptive field differs (the test above can fail)") {
  const torch::Device cpu(torch::kCPU);
  CHECK(TiledDifference("sharpen", Fixed(64, 0), Frames(1, 101, 157, cpu)) > 0.01f);
  CHECK(TiledDifference("restore", Fixed(72, 4), Frames(1, 75, 97, cpu)) > kCudaTileBound);
}

TEST_CASE("tiled model: out of memory halves the calls, then tiles, and the output stays exact") {
  torch::InferenceMode guard;
  const torch::Device cpu(torch::kCPU);
  // 3 x 512 x 640 floats: 3.75 MiB a frame; calls over 1 MiB run out of memory.
  torch::Tensor x = Frames(2, 512, 640, cpu);
  Result<torch::Tensor> whole = Example("sharpen", cpu)->Run(x);
  REQUIRE(whole.ok());
  TiledModel model(std::make_unique<OomFaultModel>(Example("sharpen", cpu), 1),
                   TileSetting{TileMode::kAuto, 0, kAutoTileOverlap}, "sharpen");
  Result<torch::Tensor> y = model.Run(x);
  REQUIRE(y.ok());
  CHECK(torch::equal(*y, *whole));
  // 2 frames -> 1 frame -> tiles of 320 (1.2 MiB, still over) -> tiles of 160.
  CHECK(model.fallbacks().events == 3);
  CHECK(model.fallbacks().per_call == 1);
  CHECK(model.fallbacks().tile == 160);
  CHECK(model.tile() == 160);
  // It sticks: the next batch starts where the last one ended, without new errors.
  REQUIRE(model.Run(x).ok());
  CHECK(model.fallbacks().events == 3);
}

TEST_CASE("tiled model: halving the batch alone is enough when one frame fits") {
  torch::InferenceMode guard;
  const torch::Device cpu(torch::kCPU);
  torch::Tensor x = Frames(4, 256, 320, cpu);  // 0.94 MiB a frame
  TiledModel model(std::make_unique<OomFaultModel>(Example("sharpen", cpu), 1), TileSetting{},
                   "sharpen");
  Result<torch::Tensor> y = model.Run(x);
  REQUIRE(y.ok());
  CHECK(y->size(0) == 4);
  CHECK(model.fallbacks().events == 2);  // 4 -> 2 -> 1
  CHECK(model.fallbacks().per_call == 1);
  CHECK(model.fallbacks().tile == 0);
}

TEST_CASE("tiled model: out of memory fails only past the last fallback, saying why") {
  torch::InferenceMode guard;
  const torch::Device cpu(torch::kCPU);
  torch::Tensor x = Frames(1, 512, 640, cpu);
  // tile off: no tiles after one frame per call.
  TiledModel off(std::make_unique<OomFaultModel>(Example("sharpen", cpu), 1), TileSetting{},
                 "sharpen");
  Result<torch::Tensor> a = off.Run(x);
  REQUIRE(!a.ok());
  CHECK(a.status().code() == StatusCode::kOutOfMemory);
  CHECK(a.status().message().find("tile is off") != std::string::npos);
  // Every call fails: tiles halve down to the smallest, then the error says so.
  TiledModel never(std::make_unique<OomFaultModel>(Example("sharpen", cpu), 0),
                   TileSetting{TileMode::kAuto, 0, kAutoTileOverlap}, "sharpen");
  Result<torch::Tensor> b = never.Run(x);
  REQUIRE(!b.ok());
  CHECK(b.status().code() == StatusCode::kOutOfMemory);
  CHECK(b.status().message().find("the smallest") != std::string::npos);
  CHECK(never.tile() == 2 * kAutoTileOverlap + kMinTileInterior);  // 96: 320, 160, 96
}

TEST_CASE("tiled model: the hook's error is what a CUDA out-of-memory error becomes") {
  // The type LibTorch's allocator raises, and the bare message of 1.13's TorchScript rethrow.
  c10::OutOfMemoryError typed({__func__, __FILE__, __LINE__}, "CUDA out of memory. Tried ...");
  CHECK(ModelRaised(typed).code() == StatusCode::kOutOfMemory);
  std::runtime_error rethrown(
      "The following operation failed in the TorchScript interpreter.\nTraceback ...\n"
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
  Status s = ModelRaised(rethrown);
  CHECK(s.code() == StatusCode::kOutOfMemory);
  CHECK(s.message() ==
        "model raised: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
  CHECK(ModelRaised(std::runtime_error("shape mismatch")).code() == StatusCode::kModelInvalid);
}
