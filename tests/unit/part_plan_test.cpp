#include <doctest/doctest.h>

#include "supervisor/plan/part_plan.h"

using namespace framemill;

namespace {

JobPlan Plan(int64_t frames, int32_t chunk, int64_t chunks_per_segment) {
  Result<JobPlan> p = MakePlan(frames, chunk, chunks_per_segment);
  REQUIRE(p.ok());
  return *p;
}

}  // namespace

TEST_CASE("part: I/N is parsed, and anything else is refused with what was expected") {
  Result<PartRef> p = ParsePartRef("2/3");
  REQUIRE(p.ok());
  CHECK(p->index == 2);
  CHECK(p->count == 3);
  CHECK(p->ToString() == "2/3");
  for (const char* bad : {"", "2", "0/3", "4/3", "-1/3", "2/0", "a/b", "2/3/4", "1/10001", " 1/2"}) {
    INFO(bad);
    CHECK_FALSE(ParsePartRef(bad).ok());
  }
  CHECK(PartRef().whole());
}

TEST_CASE("parts: contiguous whole segments, as even as they allow, covering every frame") {
  const JobPlan plan = Plan(1000, 10, 3);  // 34 segments of 30 frames, the last of 10
  Result<std::vector<PartRange>> parts = SplitIntoParts(plan, 4);
  REQUIRE(parts.ok());
  REQUIRE(parts->size() == 4);
  int64_t next_segment = 0, next_frame = 0;
  for (const PartRange& r : *parts) {
    CHECK(r.first_segment == next_segment);
    CHECK(r.first_frame == next_frame);
    CHECK((r.segment_count == 8 || r.segment_count == 9));
    next_segment = r.end_segment();
    next_frame = r.first_frame + r.frames;
  }
  CHECK(next_segment == 34);
  CHECK(next_frame == 1000);
  // More parts than segments: refused, saying how to cut finer.
  Result<std::vector<PartRange>> too_many = SplitIntoParts(Plan(100, 10, 5), 3);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().message().find("segment_seconds") != std::string::npos);
  CHECK_FALSE(SplitIntoParts(plan, 0).ok());
}

TEST_CASE("parts plan: written and read back the same, and a plan that does not tile is refused") {
  const JobPlan plan = Plan(500, 8, 4);
  Result<std::vector<PartRange>> parts = SplitIntoParts(plan, 3);
  REQUIRE(parts.ok());
  PartsPlan p;
  p.input = "/in.mp4";
  p.model = "/m.pt";
  p.output = "/out.mp4";
  p.frame_count = plan.frame_count;
  p.chunk_frames = plan.chunk_frames;
  p.chunks_per_segment = plan.chunks_per_segment;
  p.segments = static_cast<int64_t>(plan.segments.size());
  p.parts = *parts;
  Result<PartsPlan> back = ParsePartsPlan(p.ToJson());
  REQUIRE_MESSAGE(back.ok(), back.status().ToString());
  CHECK(SamePartsPlan(*back, p).ok());
  CHECK(back->parts.size() == 3);
  CHECK(back->parts[2].frames == p.parts[2].frames);

  PartsPlan other = p;
  other.frame_count = 499;
  CHECK_FALSE(SamePartsPlan(p, other).ok());
  other = p;
  other.parts.pop_back();
  CHECK_FALSE(SamePartsPlan(p, other).ok());

  nlohmann::json gap = p.ToJson();
  gap["parts"][1]["first_segment"] = gap["parts"][1]["first_segment"].get<int64_t>() + 1;
  CHECK_FALSE(ParsePartsPlan(gap).ok());
  nlohmann::json short_plan = p.ToJson();
  short_plan["parts"].erase(2);
  CHECK_FALSE(ParsePartsPlan(short_plan).ok());
  nlohmann::json version = p.ToJson();
  version["version"] = 99;
  CHECK_FALSE(ParsePartsPlan(version).ok());
  CHECK_FALSE(ParsePartsPlan(nlohmann::json::parse(R"({"version": 1})")).ok());
}
