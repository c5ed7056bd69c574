// The lock of shared state, in a form clang's thread safety analysis understands
// (common/thread_annotations.h): Mutex (a std::mutex), MutexLock (holds one for a scope) and
// CondVar (waits on one). The fields a Mutex guards are declared GUARDED_BY it, and the private
// helpers that expect it held REQUIRES it; the thread_safety test then refuses, under clang, any
// code that touches them without it.
//
// CondVar::Wait takes no predicate: the caller loops on its condition with the lock held,
//
//   MutexLock lock(&mu_);
//   while (queue_.empty()) ready_.Wait(&mu_);
//
// so the condition is read where the analysis sees the lock (a predicate lambda is a function
// of its own to it, holding nothing).
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace framemill {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from its construction to the end of its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Lets `mu` go until notified (or woken for no reason: loop on the condition), then takes it
  // again before it returns.
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace framemill
