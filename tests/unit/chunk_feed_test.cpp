// The chunks' side of dispatch (supervisor/workers/chunk_feed.h): requests made from the plan and
// the board, results matched to the chunks a worker holds, and a chunk's failures counted until
// the job fails.
#include <doctest/doctest.h>

#include <deque>
#include <string>

#include "supervisor/workers/chunk_feed.h"

using namespace framemill;

namespace {

JobPlan ThreeChunks() {
  JobPlan plan;
  plan.frame_count = 12;
  plan.chunk_frames = 4;
  for (int64_t i = 0; i < 3; ++i) plan.chunks.push_back({i, i * 4, 4, 0});
  return plan;
}

ArenaGeometry Arena() {
  ArenaGeometry g;
  g.slot_count = 2;
  g.chunk_frames = 4;
  return g;
}

}  // namespace

TEST_CASE("chunk feed: a ready chunk's request says where its frames lie, and an unsent one is next") {
  const JobPlan plan = ThreeChunks();
  JobSettings settings;
  settings.batch = 2;
  ChunkFeed feed(plan, settings);
  CHECK_FALSE(feed.begun());
  ChunkBoard board(3, 2);
  feed.Begin(&board, "/framemill-arena", Arena(), 0);
  CHECK(feed.begun());
  CHECK_FALSE(feed.Next());  // nothing decoded yet
  board.MarkDecoded(1, 1);
  std::optional<ChunkRequest> rq = feed.Next();
  REQUIRE(rq);
  CHECK(rq->kind == ChunkRequest::kChunk);
  CHECK(rq->chunk_id == 1);
  CHECK(rq->slot == 1);
  CHECK(rq->first_frame == 4);
  CHECK(rq->frames == 4);
  CHECK(rq->batch == 2);
  CHECK(rq->arena.slot_count == 2);
  CHECK(std::string(rq->arena_name) == "/framemill-arena");
  CHECK_FALSE(feed.Next());
  feed.Unsent(*rq);
  rq = feed.Next();
  REQUIRE(rq);
  CHECK(rq->chunk_id == 1);
  const ChunkRequest warm = feed.Warmup();
  CHECK(warm.kind == ChunkRequest::kWarmup);
  CHECK(warm.batch == 2);
  CHECK(std::string(warm.arena_name) == "/framemill-arena");
}

TEST_CASE("chunk feed: a result answers one held chunk at its slot, and processed ones are counted") {
  const JobPlan plan = ThreeChunks();
  JobSettings settings;
  ChunkFeed feed(plan, settings);
  ChunkBoard board(3, 2);
  feed.Begin(&board, "/framemill-arena", Arena(), 1);  // chunk 0 done by an earlier run
  board.MarkDecoded(1, 0);
  board.MarkDecoded(2, 1);
  REQUIRE(board.TakeReady());
  REQUIRE(board.TakeReady());
  const std::deque<int64_t> held = {1, 2};
  ChunkResult r{};
  r.chunk_id = 2;
  r.slot = 1;
  r.frames_done = 4;
  r.busy_us = 1000;
  Result<size_t> index = feed.Match(r, held);
  REQUIRE(index.ok());
  CHECK(*index == 1);
  r.slot = 0;  // chunk 1's slot: a lie
  CHECK_FALSE(feed.Match(r, held).ok());
  r.chunk_id = 0;  // not held
  CHECK_FALSE(feed.Match(r, held).ok());
  CHECK(feed.processed() == 1);
  feed.Processed(2);
  CHECK(feed.processed() == 2);
  CHECK(feed.total() == 3);
}

TEST_CASE("chunk feed: a failed chunk is sent again first, until its last attempt fails the job") {
  const JobPlan plan = ThreeChunks();
  JobSettings settings;
  settings.max_attempts = 2;
  ChunkFeed feed(plan, settings);
  ChunkBoard board(3, 2);
  feed.Begin(&board, "/framemill-arena", Arena(), 0);
  board.MarkDecoded(0, 0);
  board.MarkDecoded(1, 1);
  REQUIRE(feed.Next());
  REQUIRE(feed.Next());
  // A worker dies holding both: the oldest is first in line again.
  CHECK(feed.Lost({0, 1}, "worker died") == 2);
  std::optional<ChunkRequest> rq = feed.Next();
  REQUIRE(rq);
  CHECK(rq->chunk_id == 0);
  CHECK_FALSE(board.failed());
  CHECK_FALSE(feed.Failed(0, "model failed: out of memory", StatusCode::kModelInvalid));
  REQUIRE(board.failed());
  CHECK(board.failure().code() == StatusCode::kModelInvalid);
  CHECK(board.failure().message().find("chunk 0 (frames 0-3) failed 2 times") != std::string::npos);
}
