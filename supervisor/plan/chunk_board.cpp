#include "supervisor/plan/chunk_board.h"

#include "common/clock.h"
#include "common/mutex.h"

namespace framemill {

namespace {
constexpr uint32_t kNoSlot = UINT32_MAX;
}

ChunkBoard::ChunkBoard(int64_t chunk_count, uint32_t slot_count)
    : slot_of_(static_cast<size_t>(chunk_count), kNoSlot),
      processed_flags_(static_cast<size_t>(chunk_count), false) {
  for (uint32_t s = slot_count; s > 0; --s) free_slots_.push_back(s - 1);
}

std::optional<uint32_t> ChunkBoard::AcquireSlot() {
  MutexLock lock(&mu_);
  while (free_slots_.empty() && failure_.ok()) WaitOnce(&slot_freed_);
  if (!failure_.ok()) return std::nullopt;
  uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void ChunkBoard::MarkDecoded(int64_t chunk, uint32_t slot) {
  MutexLock lock(&mu_);
  slot_of_[chunk] = slot;
  ready_.push_back(chunk);
}

std::optional<int64_t> ChunkBoard::TakeReady() {
  MutexLock lock(&mu_);
  if (ready_.empty() || !failure_.ok()) return std::nullopt;
  int64_t c = ready_.front();
  ready_.pop_front();
  return c;
}

void ChunkBoard::Requeue(int64_t chunk) {
  MutexLock lock(&mu_);
  ready_.push_front(chunk);
}

void ChunkBoard::MarkProcessed(int64_t chunk) {
  {
    MutexLock lock(&mu_);
    processed_flags_[chunk] = true;
    last_processed_us_ = MonotonicUs();
  }
  processed_.NotifyAll();
}

uint64_t ChunkBoard::last_processed_us() const {
  MutexLock lock(&mu_);
  return last_processed_us_;
}

uint32_t ChunkBoard::SlotOf(int64_t chunk) const {
  MutexLock lock(&mu_);
  return slot_of_[chunk];
}

bool ChunkBoard::WaitProcessed(int64_t chunk) {
  MutexLock lock(&mu_);
  while (!processed_flags_[chunk] && failure_.ok()) WaitOnce(&processed_);
  return failure_.ok();
}

void ChunkBoard::ReleaseSlot(int64_t chunk) {
  {
    MutexLock lock(&mu_);
    free_slots_.push_back(slot_of_[chunk]);
    slot_of_[chunk] = kNoSlot;
  }
  slot_freed_.NotifyOne();
}

void ChunkBoard::MarkAllEncoded() {
  MutexLock lock(&mu_);
  all_encoded_ = true;
}

bool ChunkBoard::AllEncoded() const {
  MutexLock lock(&mu_);
  return all_encoded_;
}

void ChunkBoard::Fail(const Status& status) {
  bool first = false;
  {
    MutexLock lock(&mu_);
    first = failure_.ok() && !status.ok();
    if (failure_.ok()) failure_ = status;
  }
  if (first && on_failure_) on_failure_(status);
  slot_freed_.NotifyAll();
  processed_.NotifyAll();
}

Status ChunkBoard::failure() const {
  MutexLock lock(&mu_);
  return failure_;
}

int ChunkBoard::blocked() const {
  MutexLock lock(&mu_);
  return blocked_;
}

bool ChunkBoard::failed() const {
  MutexLock lock(&mu_);
  return !failure_.ok();
}

}  // namespace framemill
