// framemill-night's shared-memory budget against the product's own arena sizing.
#include "bench/night_arena.h"

#include <doctest/doctest.h>

#include "common/shm_protocol.h"

namespace framemill::night {
namespace {

// The first GPU night (seed 7, --sizes 320x240,640x360) gave every job arena_mb=32, and
// SizeArena refused each upscale2x job at 640x360 as invalid_job.
TEST_CASE("night arena: the largest job of the night gets its 2 chunks through SizeArena") {
  for (const std::vector<std::pair<int, int>>& sizes :
       {std::vector<std::pair<int, int>>{{64, 48}, {96, 64}},
        std::vector<std::pair<int, int>>{{320, 240}, {640, 360}},
        std::vector<std::pair<int, int>>{{1920, 1080}}}) {
    const int64_t mb = NightArenaMiB(sizes, 8);
    for (const auto& [w, h] : sizes) {
      ArenaGeometry shape;
      shape.chunk_frames = 8;
      shape.in_width = static_cast<uint32_t>(w);
      shape.in_height = static_cast<uint32_t>(h);
      shape.out_width = static_cast<uint32_t>(w * kNightMaxScale);
      shape.out_height = static_cast<uint32_t>(h * kNightMaxScale);
      ArenaDemand demand;
      demand.workers = 2;
      demand.encoders = 2;
      demand.chunks = 1000;
      demand.arena_mb = mb;
      Result<ArenaGeometry> g = SizeArena(shape, demand);
      CAPTURE(w);
      CAPTURE(h);
      REQUIRE(g.ok());
      CHECK(g->slot_count >= 2);
      CHECK(NightShmMiB(mb) * int64_t{1 << 20} >= static_cast<int64_t>(g->total_bytes) * 2);
    }
  }
  // Small frames keep the night's old budget, which the CPU nights were measured with.
  CHECK(NightArenaMiB({{64, 48}, {96, 64}, {128, 96}}, 8) == 32);
  CHECK(NightShmMiB(32) == 96);
  // The arena that failed: 32 MiB cannot hold 2 chunks at 640x360 x2.
  CHECK(NightArenaMiB({{640, 360}}, 8) > 32);
}

}  // namespace
}  // namespace framemill::night
