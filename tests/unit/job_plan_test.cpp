#include <doctest/doctest.h>

#include "supervisor/plan/job_plan.h"

using framemill::ChunksPerSegment;
using framemill::MakePlan;

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
