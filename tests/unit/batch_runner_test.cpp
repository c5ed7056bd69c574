// BatchRunner's chunks back to back (worker/batch/batch_runner.h): a chunk whose last download is
// left running while the next one starts, its output complete once FinishOutput returns. On the CPU
// (nothing is left pending there), and with FRAMEMILL_TEST_DEVICE=cuda on the GPU, where the
// download really is still running: frames large enough that it takes milliseconds, in
// page-locked memory as a worker's page-locked arena is, and in pageable memory, whose copies
// are staged (the last two batches' outputs then wait in the host buffers).
#include "doctest_with_torch.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "common/env_knobs.h"
#include "example_model.h"
#include "torch_devices.h"
#include "worker/batch/batch_runner.h"

using namespace framemill;

namespace {

constexpr int64_t kBatch = 4;

// A chunk of `n` rgb24 frames, frame f flat at (seed + 7f) % 256, in one buffer of input and one
// of output, page-locked (torch's pinned host memory) when the device is CUDA, unless `staged`.
// The frames are 1080p on CUDA (a download of milliseconds), a sixteenth of that on the CPU;
// `half`: half as high and wide.
struct Chunk {
  torch::Tensor in, out;
  ChunkFrames frames;

  Chunk(const torch::Device& device, int64_t n, int seed, bool half = false, bool staged = false) {
    const bool cuda = device.is_cuda();
    const bool pinned = cuda && !staged;
    const int64_t h = (cuda ? 1080 : 270) / (half ? 2 : 1);
    const int64_t w = (cuda ? 1920 : 480) / (half ? 2 : 1);
    auto opts = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned);
    in = torch::empty({n, h, w, 3}, opts);
    out = torch::zeros({n, h, w, 3}, opts);
    for (int64_t f = 0; f < n; ++f) in[f].fill_((seed + 7 * f) % 256);
    frames.in = in.data_ptr<uint8_t>();
    frames.out = out.data_ptr<uint8_t>();
    frames.frames = n;
    frames.batch = kBatch;
    frames.layout.format = FrameFormat::kRgb24;
    frames.layout.height = h;
    frames.layout.width = w;
    frames.out_h = h;
    frames.out_w = w;
    frames.pinned = pinned;
    frames.overlap_next = true;
  }

  // Frames whose output is not the invert model's of their input (255 - value), read from the
  // buffer as it is now.
  int64_t Wrong() const {
    const torch::Tensor want = 255 - in.to(torch::kInt32);
    return (out.to(torch::kInt32) != want).flatten(1).any(1).sum().item<int64_t>();
  }
};

const std::function<void(int64_t, int64_t)> kNoHook = [](int64_t, int64_t) {};
const std::function<void(int64_t)> kNoCount = [](int64_t) {};

}  // namespace

// The devices to run on, each with its arenas' kinds: on CUDA page-locked and staged.
std::vector<std::pair<torch::Device, bool>> DevicesAndStaging() {
  std::vector<std::pair<torch::Device, bool>> runs;
  for (const torch::Device& device : test::TorchTestDevices()) {
    runs.emplace_back(device, false);
    if (device.is_cuda()) runs.emplace_back(device, true);
  }
  return runs;
}

TEST_CASE("batch runner: a chunk's output left pending is complete once FinishOutput returns") {
  for (const auto& [device, staged] : DevicesAndStaging()) {
    INFO("on " << device.str() << (staged ? ", staged" : ""));
    std::unique_ptr<FrameModel> model = test::ExampleModel("invert", device);
    BatchRunner runner(*model);
    // Three chunks back to back, as a worker runs them; the third of another frame size (the
    // runner makes its buffers again, while the second's download may still run from them).
    // 10 frames: 3 batches, so the next chunk's first batch reuses the buffer of the last one's.
    Chunk a(device, 10, 11, false, staged), b(device, 10, 101, false, staged),
        c(device, 6, 201, /*half=*/true, staged);
    REQUIRE(runner.Run(a.frames, kNoHook, kNoCount).ok());
    // On CUDA the chunk's last download is left running; on the CPU nothing is.
    CHECK(runner.OutputPending() == device.is_cuda());
    int64_t before_wrong = -1;
    bool finished = false;
    auto finish_at_first_batch = [&](Chunk* before) {
      return [&, before](int64_t) {
        if (finished) return;
        finished = true;
        REQUIRE(runner.FinishOutput().ok());
        before_wrong = before->Wrong();
      };
    };
    REQUIRE(runner.Run(b.frames, kNoHook, finish_at_first_batch(&a)).ok());
    CHECK(before_wrong == 0);  // a's output was complete before b's first batch ended
    CHECK(runner.OutputPending() == device.is_cuda());
    finished = false;
    before_wrong = -1;
    REQUIRE(runner.Run(c.frames, kNoHook, finish_at_first_batch(&b)).ok());
    CHECK(before_wrong == 0);  // b's, checked the same way
    REQUIRE(runner.FinishOutput().ok());
    CHECK_FALSE(runner.OutputPending());
    CHECK(c.Wrong() == 0);
    CHECK(a.Wrong() == 0);
    CHECK(b.Wrong() == 0);
    // Without overlap_next, Run returns with every byte in place.
    Chunk d(device, 10, 57, false, staged);
    d.frames.overlap_next = false;
    REQUIRE(runner.Run(d.frames, kNoHook, kNoCount).ok());
    CHECK_FALSE(runner.OutputPending());
    CHECK(d.Wrong() == 0);
  }
}

TEST_CASE(
    "batch runner: a chunk that fails after one left pending leaves that one's output whole") {
  for (const auto& [device, staged] : DevicesAndStaging()) {
    INFO("on " << device.str() << (staged ? ", staged" : ""));
    std::unique_ptr<FrameModel> model = test::ExampleModel("invert", device);
    BatchRunner runner(*model);
    Chunk a(device, 10, 33, false, staged), b(device, 10, 77, false, staged);
    REQUIRE(runner.Run(a.frames, kNoHook, kNoCount).ok());
    // b's model call is asked for another output size: a wrong shape, at its first batch, before
    // any after_batch (so a's output is finished only after b's Run).
    b.frames.out_h /= 2;
    const Status failed = runner.Run(b.frames, kNoHook, kNoCount);
    CHECK_FALSE(failed.ok());
    REQUIRE(runner.FinishOutput().ok());
    CHECK(a.Wrong() == 0);
  }
}

TEST_CASE(
    "batch runner: a chunk failing mid-way after one left pending: that one whole, none of its "
    "own outputs written after") {
  for (const auto& [device, staged] : DevicesAndStaging()) {
    INFO("on " << device.str() << (staged ? ", staged" : ""));
    std::unique_ptr<FrameModel> model = test::ExampleModel("invert", device);
    BatchRunner runner(*model);
    // 10 frames: batches of frames 0-3, 4-7, 8-9; b fails at its third, of the same shape (its
    // buffers are not made again, so a's outputs are still waiting in them when b starts).
    Chunk a(device, 10, 21, false, staged), b(device, 10, 91, false, staged);
    b.out.fill_(77);
    REQUIRE(runner.Run(a.frames, kNoHook, kNoCount).ok());
    int64_t unwritten_at_publish = -1;  // b's first batch's frames not yet in b's output
    auto fail_third = [](int64_t first, int64_t) {
      if (first == 8) throw std::runtime_error("the third batch fails");
    };
    bool finished = false;
    auto finish_at_first_batch = [&](int64_t) {
      if (finished) return;
      finished = true;
      REQUIRE(runner.FinishOutput().ok());
      unwritten_at_publish = b.out.narrow(0, 0, 4).eq(77).flatten(1).all(1).sum().item<int64_t>();
    };
    CHECK_FALSE(runner.Run(b.frames, fail_third, finish_at_first_batch).ok());
    REQUIRE(runner.FinishOutput().ok());
    CHECK(a.Wrong() == 0);
    // Staged, publishing a moved a's outputs only: b's first batch still waited in its buffer
    // (the host did not wait for b's compute there).
    if (staged) CHECK(unwritten_at_publish == 4);
    // Nothing of b's failed batch, nor (staged) of the batches before it, reached its output.
    CHECK(b.out.narrow(0, 8, 2).eq(77).all().item<bool>());
    if (staged) CHECK(b.out.eq(77).all().item<bool>());
  }
}

TEST_CASE("batch runner: with the profile on, five chunks back to back and one by one are timed") {
  // FRAMEMILL_WORKER_PROFILE=1 times every batch with CUDA events, and the fed period from one
  // chunk's events to the next's: events of every chunk slot, reused chunk after chunk.
  ::setenv("FRAMEMILL_WORKER_PROFILE", "1", 1);
  ReadKnobs();
  for (const torch::Device& device : test::TorchTestDevices()) {
    for (bool overlap : {true, false}) {
      INFO("on " << device.str() << (overlap ? ", back to back" : ", one by one"));
      std::unique_ptr<FrameModel> model = test::ExampleModel("invert", device);
      BatchRunner runner(*model);
      std::vector<std::unique_ptr<Chunk>> chunks;
      for (int k = 0; k < 5; ++k) {
        chunks.push_back(std::make_unique<Chunk>(device, 6, 13 * k));
        chunks.back()->frames.overlap_next = overlap;
      }
      // One after the other, as a fed worker runs them (nothing in between).
      for (const auto& c : chunks) {
        bool finished = false;
        auto finish = [&](int64_t) {
          if (!finished) REQUIRE(runner.FinishOutput().ok());
          finished = true;
        };
        REQUIRE(runner.Run(c->frames, kNoHook, finish).ok());
      }
      REQUIRE(runner.FinishOutput().ok());
      for (const auto& c : chunks) CHECK(c->Wrong() == 0);
      // Every chunk summed (the first apart), and the later ones timed as fed: each started at
      // once. (Fed means less than 1 ms after the chunk before ended; on a loaded machine the
      // host may be descheduled longer than that between two chunks, so not all four need be.)
      REQUIRE(runner.profile() != nullptr);
      CHECK(runner.profile()->first().frames == 6);
      CHECK(runner.profile()->later().frames == 4 * 6);
      CHECK(runner.profile()->later().model > 0);
      CHECK(runner.profile()->later().fed_frames > 0);
      CHECK(runner.profile()->later().fed_period > 0);
    }
  }
  ::unsetenv("FRAMEMILL_WORKER_PROFILE");
  ReadKnobs();
}
