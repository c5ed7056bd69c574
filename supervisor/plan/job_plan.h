// Cutting a video into chunks (the unit of dispatch and retry) and segments (the unit of
// encoding and durability). A segment is a whole number of consecutive chunks; the last chunk
// and the last segment may be short. Chunks and segments are named by their index, and every
// path derived from them uses that name.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
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
  int64_t chunks_per_segment = 1;  // every segment's length in chunks but the last's
  std::vector<ChunkPlan> chunks;
  std::vector<SegmentPlan> segments;

  nlohmann::json ToJson() const;  // for the job's state file and logs
};

// The longest segment, in chunks, of a job with more than one encoder: several encoders work
// on several segments at once, and every chunk of those segments waits in the arena until its
// encoder takes it; short segments let them all fit.
inline constexpr int64_t kParallelSegmentChunks = 4;

// Chunks per segment for a target segment length: round(seconds * fps / chunk_frames), at
// least 1 (also for a frame rate of 0 or one that is not a number, and chunk_frames < 1).
int64_t ChunksPerSegment(double segment_seconds, double fps, int32_t chunk_frames);

// Every rule that sizes a job's segments, in one place: the target length
// (ChunksPerSegment of settings.segment_seconds at `fps`), then, with settings.encoders > 1, at
// most kParallelSegmentChunks chunks.
int64_t SegmentChunks(const JobSettings& settings, double fps);

// The plan of a job: MakePlan with settings.chunk_frames and SegmentChunks(settings, fps).
Result<JobPlan> PlanJob(int64_t frame_count, double fps, const JobSettings& settings);

// Errors (kInternal) only for impossible arguments: frame_count < 1, chunk_frames < 1,
// chunks_per_segment < 1.
Result<JobPlan> MakePlan(int64_t frame_count, int32_t chunk_frames, int64_t chunks_per_segment);

}  // namespace framemill
