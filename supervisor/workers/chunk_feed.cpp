#include "supervisor/workers/chunk_feed.h"

#include "common/log.h"
#include "common/shm_validate.h"

namespace framemill {
namespace {

std::string FrameRange(const ChunkPlan& c) {
  return "frames " + std::to_string(c.first_frame) + "-" +
         std::to_string(c.first_frame + c.frames - 1);
}

}  // namespace

ChunkFeed::ChunkFeed(const JobPlan& plan, const JobSettings& settings)
    : plan_(plan), settings_(settings), attempts_(plan.chunks.size(), 0) {}

void ChunkFeed::Begin(ChunkBoard* board, const std::string& arena_name, const ArenaGeometry& arena,
                      int64_t first_chunk) {
  board_ = board;
  arena_name_ = arena_name;
  arena_ = arena;
  processed_ = first_chunk;
}

std::optional<ChunkRequest> ChunkFeed::Next() {
  std::optional<int64_t> c = board_->TakeReady();
  if (!c) return std::nullopt;
  const ChunkPlan& chunk = plan_.chunks[*c];
  ChunkRequest rq{};
  rq.kind = ChunkRequest::kChunk;
  rq.slot = board_->SlotOf(*c);
  rq.chunk_id = static_cast<uint64_t>(chunk.index);
  rq.first_frame = static_cast<uint64_t>(chunk.first_frame);
  rq.frames = static_cast<uint32_t>(chunk.frames);
  rq.batch = static_cast<uint32_t>(settings_.batch);
  rq.arena = arena_;
  CopyString(rq.arena_name, arena_name_);
  return rq;
}

void ChunkFeed::Unsent(const ChunkRequest& request) {
  board_->Requeue(static_cast<int64_t>(request.chunk_id));
}

ChunkRequest ChunkFeed::Warmup() const {
  ChunkRequest warm{};
  warm.kind = ChunkRequest::kWarmup;
  warm.batch = static_cast<uint32_t>(settings_.batch);
  warm.arena = arena_;
  CopyString(warm.arena_name, arena_name_);
  return warm;
}

Result<size_t> ChunkFeed::Match(const ChunkResult& r, const std::deque<int64_t>& held) const {
  // What was sent, from our own records: chunk, slot (the board's), frames (the plan's).
  std::vector<HeldChunk> sent;
  for (int64_t c : held) {
    sent.push_back({static_cast<uint64_t>(c), board_->SlotOf(c),
                    static_cast<uint32_t>(plan_.chunks[c].frames)});
  }
  size_t index = 0;
  Status valid = ValidateChunkResult(r, sent, &index);
  if (!valid.ok()) return valid;
  return index;
}

void ChunkFeed::Processed(int64_t chunk) {
  ++processed_;
  board_->MarkProcessed(chunk);
}

bool ChunkFeed::Failed(int64_t chunk, const std::string& why, StatusCode code) {
  const ChunkPlan& c = plan_.chunks[chunk];
  int tries = ++attempts_[chunk];
  if (tries >= settings_.max_attempts) {
    board_->Fail(Status(code, "chunk " + std::to_string(chunk) + " (" + FrameRange(c) +
                                  ") failed " + std::to_string(tries) + " times; last: " + why));
    return false;
  }
  spdlog::warn("chunk {} ({}) failed (attempt {} of {}): {}; sending it again", chunk,
               FrameRange(c), tries, settings_.max_attempts, why);
  board_->Requeue(chunk);
  return true;
}

int ChunkFeed::Lost(const std::deque<int64_t>& held, const std::string& why) {
  int again = 0;
  // From the back, so that the oldest chunk ends up first in the queue.
  for (auto it = held.rbegin(); it != held.rend(); ++it) {
    again += Failed(*it, why, StatusCode::kWorkerFailed) ? 1 : 0;
  }
  return again;
}

}  // namespace framemill
