#include <cstdint>
#include <doctest/doctest.h>

#include <new>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "common/spsc_ring.h"

using framemill::PopResult;
using framemill::SpscRing;

namespace {

struct Item {
  uint64_t seq;
  uint64_t check;  // a function of seq: a torn item would not match
};

using Ring = SpscRing<Item, 8>;
constexpr uint64_t kItems = 200000;

Item MakeItem(uint64_t i) { return Item{i, i * 2654435761u + 7}; }

// Out of order or torn: not the item `i` should be.
bool Wrong(const Item& it, uint64_t i) { return it.seq != i || it.check != MakeItem(i).check; }

// A ring in anonymous shared memory, so that a forked child shares it; unmapped at scope exit.
struct SharedRing {
  SharedRing()
      : mem(::mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                   0)),
        ring(mem == MAP_FAILED ? nullptr : new (mem) Ring()) {}
  ~SharedRing() {
    if (ring != nullptr) ::munmap(mem, sizeof(Ring));
  }
  void* mem;
  Ring* ring;
};

// Forks a child that runs `produce(ring)` and exits; returns its pid (-1 if fork failed).
template <typename F>
pid_t ForkProducer(Ring* ring, F produce) {
  pid_t child = ::fork();
  if (child == 0) {
    produce(ring);
    ::_exit(0);
  }
  return child;
}

void Produce(Ring* ring) {
  for (uint64_t i = 0; i < kItems;) {
    if (ring->TryPush(MakeItem(i)))
      ++i;
    else
      std::this_thread::yield();
  }
}

// Pops kItems and returns how many arrived out of order or torn.
uint64_t Consume(Ring* ring) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < kItems;) {
    Item it{};
    PopResult r = ring->TryPop(&it);
    if (r == PopResult::kEmpty) {
      std::this_thread::yield();
      continue;
    }
    REQUIRE(r == PopResult::kItem);
    if (Wrong(it, i)) ++bad;
    ++i;
  }
  return bad;
}

}  // namespace

TEST_CASE("ring: full and empty are reported, order is kept") {
  Ring ring;
  Item it{};
  CHECK(ring.TryPop(&it) == PopResult::kEmpty);
  for (uint64_t i = 0; i < 8; ++i) CHECK(ring.TryPush(MakeItem(i)));
  CHECK_FALSE(ring.TryPush(MakeItem(8)));
  CHECK(ring.Size() == 8);
  for (uint64_t i = 0; i < 8; ++i) {
    REQUIRE(ring.TryPop(&it) == PopResult::kItem);
    CHECK(it.seq == i);
  }
  CHECK(ring.TryPop(&it) == PopResult::kEmpty);
}

TEST_CASE("ring: impossible indices are reported as corruption") {
  Ring ring;
  ring.tail.store(100);  // a scribbling producer
  Item it{};
  CHECK(ring.TryPop(&it) == PopResult::kCorrupt);
}

TEST_CASE("ring: two threads pass 200,000 items in order") {
  Ring ring;
  std::thread producer(Produce, &ring);
  uint64_t bad = Consume(&ring);
  producer.join();
  CHECK(bad == 0);
}

TEST_CASE("ring: two processes pass 200,000 items in order through shared memory") {
  SharedRing shared;
  REQUIRE(shared.ring != nullptr);
  pid_t child = ForkProducer(shared.ring, Produce);
  REQUIRE(child >= 0);
  uint64_t bad = Consume(shared.ring);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(bad == 0);
}

TEST_CASE("ring: a producer killed at any moment never blocks the consumer") {
  SharedRing shared;
  REQUIRE(shared.ring != nullptr);
  Ring* ring = shared.ring;
  pid_t child = ForkProducer(ring, [](Ring* r) {
    for (uint64_t i = 0;; ++i) {
      while (!r->TryPush(MakeItem(i))) {
      }
    }
  });
  REQUIRE(child >= 0);
  // Drain for a while, then SIGKILL the producer mid-stream and drain what it published.
  uint64_t next = 0, bad = 0;
  Item it{};
  while (next < 50000) {
    if (ring->TryPop(&it) == PopResult::kItem) {
      if (Wrong(it, next)) ++bad;
      ++next;
    }
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  PopResult r;
  while ((r = ring->TryPop(&it)) == PopResult::kItem) {
    if (Wrong(it, next)) ++bad;
    ++next;
  }
  CHECK(r == PopResult::kEmpty);
  CHECK(bad == 0);
}

// The supervisor's sides: its own index, the other side's checked.

using framemill::CheckedConsumer;
using framemill::CheckedProducer;
using framemill::CheckRingIndices;
using framemill::PushResult;
using framemill::RingSide;

TEST_CASE("ring: index checks accept what a ring can hold and nothing else") {
  // consumer: mine = head, other = tail
  CHECK(CheckRingIndices(RingSide::kConsumer, 5, 5, 0, 8) == 0);
  CHECK(CheckRingIndices(RingSide::kConsumer, 5, 13, 0, 8) == 8);
  CHECK(CheckRingIndices(RingSide::kConsumer, 5, 14, 0, 8) == -1);  // beyond head + capacity
  CHECK(CheckRingIndices(RingSide::kConsumer, 5, 4, 0, 8) == -1);   // behind head
  CHECK(CheckRingIndices(RingSide::kConsumer, 5, 6, 7, 8) == -1);   // moved backwards
  CHECK(CheckRingIndices(RingSide::kConsumer, 0, UINT64_MAX, 0, 8) == -1);
  // producer: mine = tail, other = head
  CHECK(CheckRingIndices(RingSide::kProducer, 10, 2, 0, 8) == 8);
  CHECK(CheckRingIndices(RingSide::kProducer, 10, 1, 0, 8) == -1);   // more queued than fits
  CHECK(CheckRingIndices(RingSide::kProducer, 10, 11, 0, 8) == -1);  // read what was not written
  CHECK(CheckRingIndices(RingSide::kProducer, 10, 9, 10, 8) == -1);  // moved backwards
}

TEST_CASE("ring: the checked consumer refuses a corrupted tail and never reads past it") {
  SharedRing s;
  REQUIRE(s.ring != nullptr);
  CheckedConsumer<Item, 8> consumer(s.ring);
  REQUIRE(s.ring->TryPush(MakeItem(0)));
  REQUIRE(s.ring->TryPush(MakeItem(1)));
  Item got{};
  REQUIRE(consumer.TryPop(&got) == PopResult::kItem);
  CHECK_FALSE(Wrong(got, 0));
  SUBCASE("a tail beyond head + capacity") { s.ring->tail.store(1 + 9); }
  SUBCASE("a tail far beyond (the 0xff of a scribble)") { s.ring->tail.store(UINT64_MAX); }
  SUBCASE("a tail that moves backwards") { s.ring->tail.store(1); }
  SUBCASE("a tail behind the consumer's head") { s.ring->tail.store(0); }
  CHECK(consumer.TryPop(&got) == PopResult::kCorrupt);
  // For good: a worker that puts the index back is not trusted again.
  s.ring->tail.store(2);
  CHECK(consumer.TryPop(&got) == PopResult::kCorrupt);
}

TEST_CASE("ring: the checked consumer ignores a head written by the producer") {
  SharedRing s;
  REQUIRE(s.ring != nullptr);
  CheckedConsumer<Item, 8> consumer(s.ring);
  for (uint64_t i = 0; i < 3; ++i) REQUIRE(s.ring->TryPush(MakeItem(i)));
  s.ring->head.store(2);  // the producer (a worker) lies about what was read
  Item got{};
  for (uint64_t i = 0; i < 3; ++i) {
    REQUIRE(consumer.TryPop(&got) == PopResult::kItem);
    CHECK_FALSE(Wrong(got, i));  // every item, once, in order
  }
  CHECK(consumer.TryPop(&got) == PopResult::kEmpty);
}

TEST_CASE("ring: the checked producer refuses a corrupted head and keeps its own tail") {
  SharedRing s;
  REQUIRE(s.ring != nullptr);
  CheckedProducer<Item, 8> producer(s.ring);
  for (uint64_t i = 0; i < 8; ++i) REQUIRE(producer.TryPush(MakeItem(i)) == PushResult::kPushed);
  CHECK(producer.TryPush(MakeItem(8)) == PushResult::kFull);
  Item got{};
  REQUIRE(s.ring->TryPop(&got) == PopResult::kItem);
  s.ring->tail.store(0);  // the consumer (a worker) scribbles on the producer's index: ignored
  CHECK(producer.TryPush(MakeItem(8)) == PushResult::kPushed);
  CHECK(s.ring->tail.load() == 9);
  SUBCASE("a head beyond the tail") { s.ring->head.store(10); }
  SUBCASE("a head that moves backwards") { s.ring->head.store(0); }
  SUBCASE("the 0xff of a scribble") { s.ring->head.store(UINT64_MAX); }
  CHECK(producer.TryPush(MakeItem(9)) == PushResult::kCorrupt);
  CHECK(s.ring->tail.load() == 9);  // nothing written
}

TEST_CASE("ring: the checked producer sees a lying head without pushing") {
  SharedRing s;
  REQUIRE(s.ring != nullptr);
  CheckedProducer<Item, 8> producer(s.ring);
  REQUIRE(producer.TryPush(MakeItem(0)) == PushResult::kPushed);
  REQUIRE(producer.TryPush(MakeItem(1)) == PushResult::kPushed);
  CHECK(producer.Verify());
  s.ring->head.store(1);  // the worker read one: fine
  CHECK(producer.Verify());
  s.ring->head.store(7);  // claims to have read requests never written
  CHECK_FALSE(producer.Verify());
  s.ring->head.store(2);  // and then puts it right: still not trusted
  CHECK_FALSE(producer.Verify());
  CHECK(producer.TryPush(MakeItem(2)) == PushResult::kCorrupt);
}
