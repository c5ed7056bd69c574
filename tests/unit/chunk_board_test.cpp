#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "supervisor/plan/chunk_board.h"

using framemill::ChunkBoard;
using framemill::Status;
using framemill::StatusCode;

namespace {

// Returns once `n` threads are blocked in the board, or once `gave_up()` is true (the board
// failed to block: the caller's checks then say so instead of the test hanging).
template <typename GaveUp>
void WaitUntilBlocked(const ChunkBoard& board, int n, GaveUp gave_up) {
  while (board.blocked() < n && !gave_up()) std::this_thread::yield();
}

}  // namespace

TEST_CASE("board: decoding ahead stops when every slot is taken, and resumes on release") {
  ChunkBoard board(10, 2);
  auto a = board.AcquireSlot();
  auto b = board.AcquireSlot();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a != *b);
  board.MarkDecoded(0, *a);
  board.MarkDecoded(1, *b);
  std::atomic<bool> got_third{false};
  std::thread decoder([&] {
    auto c = board.AcquireSlot();
    got_third = c.has_value();
  });
  WaitUntilBlocked(board, 1, [&] { return got_third.load(); });
  CHECK_FALSE(got_third.load());  // bounded: no third slot until one is released
  CHECK(board.blocked() == 1);
  auto r = board.TakeReady();
  REQUIRE(r);
  CHECK(*r == 0);
  board.MarkProcessed(0);
  CHECK(board.WaitProcessed(0));
  board.ReleaseSlot(0);
  decoder.join();
  CHECK(got_third.load());
  CHECK(board.blocked() == 0);
}

TEST_CASE("board: the time of the latest chunk processed, for the pipeline's tail") {
  ChunkBoard board(2, 2);
  CHECK(board.last_processed_us() == 0);
  board.MarkDecoded(0, 0);
  board.MarkDecoded(1, 1);
  board.MarkProcessed(1);  // chunks may finish out of order on several workers
  const uint64_t first = board.last_processed_us();
  CHECK(first > 0);
  board.MarkProcessed(0);
  CHECK(board.last_processed_us() >= first);
}

TEST_CASE("board: a requeued chunk goes first") {
  ChunkBoard board(3, 3);
  for (int c = 0; c < 3; ++c) board.MarkDecoded(c, static_cast<uint32_t>(c));
  CHECK(*board.TakeReady() == 0);
  CHECK(*board.TakeReady() == 1);
  board.Requeue(0);
  CHECK(*board.TakeReady() == 0);
  CHECK(*board.TakeReady() == 2);
  CHECK_FALSE(board.TakeReady());
}

TEST_CASE("board: a failure wakes blocked threads and keeps the first reason") {
  ChunkBoard board(4, 1);
  REQUIRE(board.AcquireSlot());
  std::atomic<int> returned{0};
  std::thread waiter([&] {
    CHECK_FALSE(board.AcquireSlot());
    ++returned;
  });
  std::thread encoder([&] {
    CHECK_FALSE(board.WaitProcessed(3));
    ++returned;
  });
  // Both blocked before the failure: it is the failure that wakes them.
  WaitUntilBlocked(board, 2, [&] { return returned.load() > 0; });
  CHECK(returned.load() == 0);
  CHECK(board.blocked() == 2);
  board.Fail(Status(StatusCode::kInputInvalid, "first"));
  board.Fail(Status(StatusCode::kInternal, "second"));
  waiter.join();
  encoder.join();
  CHECK(returned.load() == 2);
  CHECK(board.blocked() == 0);
  CHECK(board.failure().message() == "first");
  CHECK_FALSE(board.TakeReady());
}
