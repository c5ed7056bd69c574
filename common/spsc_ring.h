// A bounded single-producer/single-consumer ring of trivially copyable messages that lives in
// shared memory. It holds no lock: either side may be killed at any instruction without blocking
// the other. An item is published by the release-store of `tail` after it is written, so a
// producer killed mid-write publishes nothing. Thread/process safety: exactly one producer and
// one consumer at a time; Reset() only while neither side is using it.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace framemill {

enum class PopResult { kEmpty, kItem, kCorrupt };

template <typename T, uint32_t kCapacity>
struct SpscRing {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>, "ring items are copied as bytes");
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "a ring in shared memory needs lock-free atomics");

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

}  // namespace framemill
