// A bounded single-producer/single-consumer ring of trivially copyable messages that lives in
// shared memory. It holds no lock: either side may be killed at any instruction without blocking
// the other. An item is published by the release-store of `tail` after it is written, so a
// producer killed mid-write publishes nothing. Thread/process safety: exactly one producer and
// one consumer at a time; Reset() only while neither side is using it.
//
// Two ways to use a ring:
//  - SpscRing::TryPush / TryPop read both indices from shared memory. For a side that trusts the
//    other (the worker: the supervisor writes its requests).
//  - CheckedProducer / CheckedConsumer keep their own index in private memory, write it to the
//    ring, and never read it back; the other side's index is read once per call and checked
//    (CheckRingIndices) before anything depends on it. For the supervisor: whatever a worker
//    writes over the ring, it cannot make the supervisor read outside the ring, read an item
//    twice, skip one, or loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace framemill {

enum class PopResult { kEmpty, kItem, kCorrupt };
enum class PushResult { kPushed, kFull, kCorrupt };

// Is `other` (the other side's index, just read from shared memory) possible, given `mine`
// (our own index, kept in private memory) and `last_other` (the other index as last seen, 0 at
// first)? Both indices only grow, and head <= tail <= head + capacity. Returns tail - head, or
// -1 when `other` is impossible:
//   consumer (mine = head, other = tail): the items ready to read;
//   producer (mine = tail, other = head): the items still queued (== capacity: full).
enum class RingSide { kConsumer, kProducer };
inline int64_t CheckRingIndices(RingSide side, uint64_t mine, uint64_t other, uint64_t last_other,
                                uint32_t capacity) {
  if (other < last_other) return -1;  // moved backwards
  uint64_t lo = side == RingSide::kConsumer ? mine : other;
  uint64_t hi = side == RingSide::kConsumer ? other : mine;
  if (hi < lo || hi - lo > capacity) return -1;
  return static_cast<int64_t>(hi - lo);
}

template <typename T, uint32_t kCapacity>
struct SpscRing {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>, "ring items are copied as bytes");
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "a ring in shared memory needs lock-free atomics");
  static constexpr uint32_t capacity = kCapacity;

  alignas(64) std::atomic<uint64_t> head{0};  // next index to read; written by the consumer
  alignas(64) std::atomic<uint64_t> tail{0};  // next index to write; written by the producer
  alignas(64) T items[kCapacity];

  // Producer side. False when full.
  bool TryPush(const T& item) {
    uint64_t t = tail.load(std::memory_order_relaxed);
    uint64_t h = head.load(std::memory_order_acquire);
    if (t - h >= kCapacity) return false;
    items[t & (kCapacity - 1)] = item;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. kCorrupt when the indices are impossible (the other side scribbled over the
  // ring); the caller must then stop trusting the other side.
  PopResult TryPop(T* out) {
    uint64_t h = head.load(std::memory_order_relaxed);
    uint64_t t = tail.load(std::memory_order_acquire);
    if (h == t) return PopResult::kEmpty;
    if (t - h > kCapacity) return PopResult::kCorrupt;
    *out = items[h & (kCapacity - 1)];
    head.store(h + 1, std::memory_order_release);
    return PopResult::kItem;
  }

  uint64_t Size() const {
    return tail.load(std::memory_order_acquire) - head.load(std::memory_order_acquire);
  }

  void Reset() {
    head.store(0, std::memory_order_relaxed);
    tail.store(0, std::memory_order_relaxed);
  }
};

// The consumer side of a ring whose producer is not trusted. Not thread-safe; one per ring.
// The item is copied out as bytes before anything looks at it, so a producer that rewrites it
// meanwhile can tear it but not change it after the caller's checks.
template <typename T, uint32_t kCapacity>
class CheckedConsumer {
 public:
  CheckedConsumer() = default;
  explicit CheckedConsumer(SpscRing<T, kCapacity>* ring) : ring_(ring) {
    ring_->head.store(0, std::memory_order_release);
  }

  PopResult TryPop(T* out) {
    if (corrupt_) return PopResult::kCorrupt;
    uint64_t tail = ring_->tail.load(std::memory_order_acquire);
    int64_t ready = CheckRingIndices(RingSide::kConsumer, head_, tail, last_tail_, kCapacity);
    if (ready < 0) {
      corrupt_ = true;
      return PopResult::kCorrupt;
    }
    last_tail_ = tail;
    if (ready == 0) return PopResult::kEmpty;
    std::memcpy(static_cast<void*>(out), &ring_->items[head_ & (kCapacity - 1)], sizeof(T));
    ++head_;
    ring_->head.store(head_, std::memory_order_release);
    return PopResult::kItem;
  }

  uint64_t last_tail() const { return last_tail_; }

 private:
  SpscRing<T, kCapacity>* ring_ = nullptr;
  uint64_t head_ = 0;       // ours; written to the ring, never read back
  uint64_t last_tail_ = 0;  // the producer's tail as last seen (it only grows)
  bool corrupt_ = false;    // once seen, for good
};

// The producer side of a ring whose consumer is not trusted. Not thread-safe; one per ring.
template <typename T, uint32_t kCapacity>
class CheckedProducer {
 public:
  CheckedProducer() = default;
  explicit CheckedProducer(SpscRing<T, kCapacity>* ring) : ring_(ring) {
    ring_->tail.store(0, std::memory_order_release);
  }

  // Reads the consumer's index and checks it without pushing: false (and corrupt from then on)
  // when it is impossible. Lets a lie be seen while nothing is being pushed.
  bool Verify() { return Queued() >= 0; }

  PushResult TryPush(const T& item) {
    const int64_t queued = Queued();
    if (queued < 0) return PushResult::kCorrupt;
    if (queued >= static_cast<int64_t>(kCapacity)) return PushResult::kFull;
    std::memcpy(static_cast<void*>(&ring_->items[tail_ & (kCapacity - 1)]), &item, sizeof(T));
    ++tail_;
    ring_->tail.store(tail_, std::memory_order_release);
    return PushResult::kPushed;
  }

 private:
  // Items queued and not yet taken, from the consumer's index checked against ours; -1 (and
  // corrupt from then on) when that index is impossible.
  int64_t Queued() {
    if (corrupt_) return -1;
    const uint64_t head = ring_->head.load(std::memory_order_acquire);
    const int64_t queued =
        CheckRingIndices(RingSide::kProducer, tail_, head, last_head_, kCapacity);
    if (queued < 0) {
      corrupt_ = true;
      return -1;
    }
    last_head_ = head;
    return queued;
  }

  SpscRing<T, kCapacity>* ring_ = nullptr;
  uint64_t tail_ = 0;       // ours; written to the ring, never read back
  uint64_t last_head_ = 0;  // the consumer's head as last seen (it only grows)
  bool corrupt_ = false;
};

}  // namespace framemill
