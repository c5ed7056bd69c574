#include "supervisor/plan/job_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace framemill {

int64_t ChunksPerSegment(double segment_seconds, double fps, int32_t chunk_frames) {
  if (chunk_frames < 1) return 1;
  double n = std::round(segment_seconds * fps / chunk_frames);
  // Also false for NaN, where the cast below would be undefined.
  if (!(n >= 1.0)) return 1;
  // More chunks than any video has (a hostile frame rate): one segment, and no overflow.
  if (n >= static_cast<double>(INT32_MAX)) return INT32_MAX;
  return static_cast<int64_t>(n);
}

int64_t SegmentChunks(const JobSettings& settings, double fps) {
  int64_t chunks = ChunksPerSegment(settings.segment_seconds, fps, settings.chunk_frames);
  if (settings.encoders > 1) chunks = std::min(chunks, kParallelSegmentChunks);
  return chunks;
}

Result<JobPlan> PlanJob(int64_t frame_count, double fps, const JobSettings& settings) {
  return MakePlan(frame_count, settings.chunk_frames, SegmentChunks(settings, fps));
}

Result<JobPlan> MakePlan(int64_t frame_count, int32_t chunk_frames, int64_t chunks_per_segment) {
  if (frame_count < 1 || chunk_frames < 1 || chunks_per_segment < 1) {
    return Status(StatusCode::kInternal,
                  "MakePlan: frame_count, chunk_frames and "
                  "chunks_per_segment must be positive");
  }
  JobPlan plan;
  plan.frame_count = frame_count;
  plan.chunk_frames = chunk_frames;
  plan.chunks_per_segment = chunks_per_segment;
  int64_t chunk_count = (frame_count + chunk_frames - 1) / chunk_frames;
  plan.chunks.reserve(static_cast<size_t>(chunk_count));
  for (int64_t c = 0; c < chunk_count; ++c) {
    ChunkPlan chunk;
    chunk.index = c;
    chunk.first_frame = c * chunk_frames;
    chunk.frames =
        static_cast<int32_t>(std::min<int64_t>(chunk_frames, frame_count - chunk.first_frame));
    chunk.segment = c / chunks_per_segment;
    if (chunk.segment == static_cast<int64_t>(plan.segments.size())) {
      SegmentPlan seg;
      seg.index = chunk.segment;
      seg.first_chunk = c;
      seg.first_frame = chunk.first_frame;
      plan.segments.push_back(seg);
    }
    SegmentPlan& seg = plan.segments.back();
    seg.chunk_count += 1;
    seg.frames += chunk.frames;
    plan.chunks.push_back(chunk);
  }
  return plan;
}

nlohmann::json JobPlan::ToJson() const {
  nlohmann::json segs = nlohmann::json::array();
  for (const SegmentPlan& s : segments) {
    segs.push_back({{"index", s.index},
                    {"first_chunk", s.first_chunk},
                    {"chunk_count", s.chunk_count},
                    {"first_frame", s.first_frame},
                    {"frames", s.frames}});
  }
  return {{"frame_count", frame_count},
          {"chunk_frames", chunk_frames},
          {"chunk_count", chunks.size()},
          {"segments", segs}};
}

}  // namespace framemill
