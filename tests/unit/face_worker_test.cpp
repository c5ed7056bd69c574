// Face mode through the real framemill-worker process (worker/worker_loop.cpp): an arena whose
// geometry has face slots, FaceWarps written into the slot after the frames, a warm-up request
// and a chunk; the worker finds each frame's warps, runs the `invert` model on the crops only and
// pastes them back. Frames of one flat colour each: inside a face the inverted colour, outside
// every face the input's bytes exactly. The compositor's geometry itself is tested in
// face_composite_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/clock.h"
#include "common/face_warp.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "real_worker.h"
#include "supervisor/workers/worker_pool.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kW = 96, kH = 64, kFrames = 3, kSlots = 2, kSize = 32, kBlend = 3;

// A square of `side` frame pixels from (x0, y0) onto the crop.
FaceWarp Square(double x0, double y0, double side) {
  const double s = kSize / side;
  FaceWarp w{};
  const double m[6] = {s, 0, -s * x0, 0, s, -s * y0};
  for (int i = 0; i < 6; ++i) w.to_crop[i] = static_cast<float>(m[i]);
  w.present = 1;
  return w;
}

// Frame pixel (x, y)'s distance in crop pixels from the nearest edge of w's crop square
// (positive inside).
double EdgeDistance(const FaceWarp& w, int x, int y) {
  const double u = w.to_crop[0] * x + w.to_crop[1] * y + w.to_crop[2];
  const double v = w.to_crop[3] * x + w.to_crop[4] * y + w.to_crop[5];
  return std::min(std::min(u + 0.5, kSize - 0.5 - u), std::min(v + 0.5, kSize - 0.5 - v));
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("face worker: the real worker composites each frame's faces from the arena slot") {
  const std::string dir =
      fs::temp_directory_path().string() + "/framemill-face-worker-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);

  ArenaGeometry shape;
  shape.chunk_frames = kFrames;
  shape.in_width = shape.out_width = kW;
  shape.in_height = shape.out_height = kH;
  shape.face_slots = kSlots;
  shape.face_size = kSize;
  shape.face_blend = kBlend;
  ArenaDemand demand;
  demand.chunks = 1;
  Result<ArenaGeometry> g = SizeArena(shape, demand);
  REQUIRE(g.ok());
  Result<SharedMemory> arena = CreateFrameArena(*g);
  REQUIRE(arena.ok());
  auto* base = static_cast<uint8_t*>(arena->data());
  const uint32_t slot = 1;  // not the first: the worker must find the slot's own warps
  const size_t frame_bytes = g->InFrameBytes();
  for (uint32_t f = 0; f < kFrames; ++f) {
    std::memset(g->SlotIn(base, slot) + f * frame_bytes, static_cast<int>(40 + 70 * f),
                frame_bytes);
  }
  // Frame 0: two faces; frame 1: none; frame 2: one, half a pixel off the grid and larger.
  FaceWarp* warps = g->SlotFaces(base, slot);
  warps[0] = Square(4, 6, 32);
  warps[1] = Square(50, 20, 24);
  warps[4] = Square(40.5, 10.5, 48);

  auto pool = WorkerPool::Create(test::RealWorker(dir, "invert", "debug"), 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  ChunkRequest rq{};
  rq.slot = slot;
  rq.frames = kFrames;
  rq.batch = 2;
  rq.arena = *g;
  CopyString(rq.arena_name, arena->name());
  rq.kind = ChunkRequest::kWarmup;
  REQUIRE((*pool)->Send(0, rq) == PushResult::kPushed);
  rq.kind = ChunkRequest::kChunk;
  rq.chunk_id = 7;
  REQUIRE((*pool)->Send(0, rq) == PushResult::kPushed);
  ChunkResult result{};
  bool answered = false;
  const uint64_t deadline = MonotonicMs() + 60000;
  while (!answered && MonotonicMs() < deadline && (*pool)->Alive(0)) {
    answered = (*pool)->Receive(0, &result) == PopResult::kItem;
    if (!answered) (*pool)->WaitForWake(50);
  }
  const std::string log = ReadFile(dir + "/worker-0-1.log");
  REQUIRE_MESSAGE(answered, log);
  CHECK_MESSAGE(result.error == 0, result.message);
  CHECK(result.frames_done == kFrames);
  // The warm-up ran the face model on crops, and did not fail.
  CHECK_MESSAGE(log.find("(face crops of 32 px)") != std::string::npos, log);
  CHECK_MESSAGE(log.find("warm-up failed") == std::string::npos, log);

  for (uint32_t f = 0; f < kFrames; ++f) {
    const int colour = 40 + 70 * static_cast<int>(f);
    int inside = 0, outside = 0, wrong = 0;
    for (uint32_t y = 0; y < kH; ++y) {
      for (uint32_t x = 0; x < kW; ++x) {
        double nearest = -1e9;
        for (uint32_t j = 0; j < kSlots; ++j) {
          const FaceWarp& w = warps[f * kSlots + j];
          if (w.present != 0) nearest = std::max(nearest, EdgeDistance(w, x, y));
        }
        const uint8_t* px = g->SlotOut(base, slot) + f * g->OutFrameBytes() + (y * kW + x) * 3;
        for (int c = 0; c < 3; ++c) {
          if (nearest < -1e-3) {
            ++outside;
            wrong += px[c] != colour;
          } else if (nearest > kBlend) {
            ++inside;
            wrong += std::abs(px[c] - (255 - colour)) > 1;
          }
        }
      }
    }
    INFO("frame " << f << ": " << inside << " inside, " << outside << " outside");
    CHECK(wrong == 0);
    CHECK(outside > 0);
    CHECK((f == 1 ? inside == 0 : inside > 3 * 300));
  }
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  CHECK((*pool)->Send(0, stop) == PushResult::kPushed);
  pool->reset();
  fs::remove_all(dir);
}
