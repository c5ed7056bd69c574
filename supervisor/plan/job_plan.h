// Cutting a video into chunks (the unit of dispatch and retry) and segments (the unit of
// encoding and durability). A segment is a whole number of consecutive chunks; the last chunk
// and the last segment may be short. Chunks and segments are named by their index, and every
// path derived from them uses that name.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

struct ChunkPlan {
  int64_t index = 0;
  int64_t first_frame = 0;
  int32_t frames = 0;
  int64_t segment = 0;  // index of the segment holding this chunk
};

struct SegmentPlan {
  int64_t index = 0;
  int64_t first_chunk = 0;
  int64_t chunk_count = 0;
  int64_t first_frame = 0;
  int64_t frames = 0;
};

struct JobPlan {
  int64_t frame_count = 0;
  int32_t chunk_frames = 0;
  std::vector<ChunkPlan> chunks;
  std::vector<SegmentPlan> segments;

  nlohmann::json ToJson() const;  // for the job's state file and logs
};

// Chunks per segment for a target segment length: round(seconds * fps / chunk_frames), at
// least 1.
int64_t ChunksPerSegment(double segment_seconds, double fps, int32_t chunk_frames);

// Errors (kInternal) only for impossible arguments: frame_count < 1, chunk_frames < 1,
// chunks_per_segment < 1.
Result<JobPlan> MakePlan(int64_t frame_count, int32_t chunk_frames, int64_t chunks_per_segment);

}  // namespace framemill
