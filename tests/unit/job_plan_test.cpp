#include <doctest/doctest.h>

#include "supervisor/plan/job_plan.h"

#include <cmath>
#include <limits>

using framemill::ChunksPerSegment;
using framemill::JobSettings;
using framemill::kParallelSegmentChunks;
using framemill::MakePlan;
using framemill::PlanJob;
using framemill::SegmentChunks;

namespace {

JobSettings Settings(double segment_seconds, int chunk_frames, int encoders) {
  JobSettings s;
  s.segment_seconds = segment_seconds;
  s.chunk_frames = chunk_frames;
  s.encoders = encoders;
  return s;
}

}  // namespace

TEST_CASE("chunks cover every frame once when the count does not divide") {
  auto p = MakePlan(2050, 37, 7);
  REQUIRE(p.ok());
  REQUIRE(p->chunks.size() == 56);  // 55 full chunks + 15 frames
  int64_t next = 0;
  for (const auto& c : p->chunks) {
    CHECK(c.first_frame == next);
    next += c.frames;
  }
  CHECK(next == 2050);
  CHECK(p->chunks.back().frames == 15);
  REQUIRE(p->segments.size() == 8);  // 7 segments of 7 chunks + one of 7 (the last short)
  int64_t frames = 0;
  for (const auto& s : p->segments) {
    CHECK(s.first_frame == frames);
    CHECK(p->chunks[s.first_chunk].first_frame == s.first_frame);
    frames += s.frames;
  }
  CHECK(frames == 2050);
  CHECK(p->segments.back().chunk_count == 56 - 7 * 7);
}

TEST_CASE("a one-frame video is one chunk in one segment") {
  auto p = MakePlan(1, 64, 10);
  REQUIRE(p.ok());
  REQUIRE(p->chunks.size() == 1);
  CHECK(p->chunks[0].frames == 1);
  REQUIRE(p->segments.size() == 1);
  CHECK(p->segments[0].frames == 1);
}

TEST_CASE("an exact multiple has no short chunk") {
  auto p = MakePlan(128, 32, 2);
  REQUIRE(p.ok());
  CHECK(p->chunks.size() == 4);
  CHECK(p->segments.size() == 2);
  for (const auto& c : p->chunks) CHECK(c.frames == 32);
  CHECK(p->chunks[3].segment == 1);
}

TEST_CASE("impossible plans are errors, not crashes") {
  CHECK_FALSE(MakePlan(0, 32, 1).ok());
  CHECK_FALSE(MakePlan(10, 0, 1).ok());
  CHECK_FALSE(MakePlan(10, 32, 0).ok());
}

TEST_CASE("segment length in chunks follows the target seconds, at least one chunk") {
  CHECK(ChunksPerSegment(60, 25, 32) == 47);  // 1500 frames / 32
  CHECK(ChunksPerSegment(60, 30000.0 / 1001, 64) == 28);
  CHECK(ChunksPerSegment(0.01, 25, 64) == 1);
}

TEST_CASE("the plan serializes its segments") {
  auto p = MakePlan(100, 10, 3);
  REQUIRE(p.ok());
  auto j = p->ToJson();
  CHECK(j["frame_count"] == 100);
  CHECK(j["chunk_count"] == 10);
  CHECK(j["segments"].size() == 4);
  CHECK(j["segments"][3]["frames"] == 10);
}

TEST_CASE("segment length in chunks is at least one for a frame rate that is 0 or not a number") {
  CHECK(ChunksPerSegment(60, 0, 32) == 1);
  CHECK(ChunksPerSegment(60, std::nan(""), 32) == 1);
  CHECK(ChunksPerSegment(60, -25, 32) == 1);
  CHECK(ChunksPerSegment(60, 25, 0) == 1);
  CHECK(ChunksPerSegment(86400, std::numeric_limits<double>::infinity(), 1) ==
        std::numeric_limits<int32_t>::max());
}

TEST_CASE("segment length rounds to the nearest chunk") {
  CHECK(ChunksPerSegment(1, 25, 10) == 3);  // 2.5 chunks: half rounds up
  CHECK(ChunksPerSegment(1, 24, 10) == 2);  // 2.4
  CHECK(ChunksPerSegment(1, 26, 10) == 3);  // 2.6
}

TEST_CASE("with one encoder, segments follow the target length alone") {
  CHECK(SegmentChunks(Settings(60, 32, 1), 25) == 47);
}

TEST_CASE("with several encoders, segments are at most four chunks long") {
  JobSettings s = Settings(60, 32, 2);
  CHECK(kParallelSegmentChunks == 4);
  CHECK(SegmentChunks(s, 25) == kParallelSegmentChunks);
  s.encoders = 16;
  CHECK(SegmentChunks(s, 25) == kParallelSegmentChunks);
  // A target shorter than the cap keeps its own length.
  s.segment_seconds = 2.56;  // 64 frames at 25 fps: 2 chunks of 32
  CHECK(SegmentChunks(s, 25) == 2);
  s.segment_seconds = 0.01;
  CHECK(SegmentChunks(s, 25) == 1);
}

TEST_CASE("a job's plan uses its chunk size and the segment rules") {
  JobSettings s = Settings(60, 16, 3);
  auto p = PlanJob(1000, 25, s);
  REQUIRE(p.ok());
  CHECK(p->chunk_frames == 16);
  CHECK(p->chunks_per_segment == kParallelSegmentChunks);
  CHECK(p->chunks.size() == 63);  // 62 full chunks + 8 frames
  CHECK(p->segments.size() == 16);
  CHECK(p->segments[0].frames == 64);
  s.encoders = 1;
  p = PlanJob(1000, 25, s);
  REQUIRE(p.ok());
  CHECK(p->chunks_per_segment == 94);  // 1500 / 16 = 93.75
  CHECK(p->segments.size() == 1);
  CHECK_FALSE(PlanJob(0, 25, s).ok());
}
