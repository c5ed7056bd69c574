// framemill-night's shared-memory budget: the service's arena_mb and the size of the night's own
// /dev/shm, derived from the largest frame size the night's jobs use. A fixed arena_mb of 32
// refused every `upscale2x` job at 640x360 (2 chunks of 8 frames at 640x360 -> 1280x720 need
// 46 MiB): good jobs failed as invalid_job on the first GPU night (seed 7).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace framemill::night {

// The night's models scale a frame by at most this (upscale2x).
inline constexpr int kNightMaxScale = 2;
// Slots the arena_mb budget must hold for the largest job (SizeArena needs 2; one more lets a
// worker's chunk be in flight beside the two).
inline constexpr int kNightArenaSlots = 3;

// The smallest arena_mb (at least 32) for which the product's own SizeArena gives
// kNightArenaSlots slots to a job of chunk_frames frames at every size in `sizes`, through a model
// that scales by kNightMaxScale, in the arena's largest 8-bit frame layout (RGB in and out).
int64_t NightArenaMiB(const std::vector<std::pair<int, int>>& sizes, int chunk_frames);

// The night's /dev/shm in MiB: room for the arenas of the jobs that run at once (at least 96).
int NightShmMiB(int64_t arena_mb);

}  // namespace framemill::night
