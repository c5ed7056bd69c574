// The wake-ups of the protocol (common/shm_protocol.h): WaitForWakeUp resumes after a signal and
// ends at its deadline; PostWakeUp and DrainWakeUps. A signal is sent only while the waiting
// thread is asleep in the kernel (its state in /proc), so each one interrupts the wait itself.
#include <cstdint>
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <pthread.h>
#include <string>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "common/clock.h"
#include "common/shm_protocol.h"

using namespace framemill;

namespace {

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1); }

// SIGUSR1 counted for the life of the object (no SA_RESTART: poll would not restart anyway).
class CountedSignal {
 public:
  CountedSignal() {
    struct sigaction sa {};
    sa.sa_handler = CountSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, &old_);
    g_signals.store(0);
  }
  ~CountedSignal() { ::sigaction(SIGUSR1, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

// A connected pair of non-blocking stream sockets, as the supervisor hands its workers.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd) == 0); }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

// The scheduler state of thread `tid` of this process: 'S' while it sleeps in a wait; '?' when
// it cannot be read (the thread is gone).
char ThreadState(pid_t tid) {
  std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat;
  if (!std::getline(file, stat)) return '?';
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

// A thread in WaitForWakeUp on one socket end.
class Waiter {
 public:
  Waiter(int fd, int timeout_ms) {
    thread_ = std::thread([this, fd, timeout_ms] {
      tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      pollfd p{fd, POLLIN, 0};
      start_ms_ = MonotonicMs();
      result_ = WaitForWakeUp(&p, 1, timeout_ms);
      elapsed_ms_ = MonotonicMs() - start_ms_;
      revents_ = p.revents;
      done_.store(true);
    });
  }
  ~Waiter() {
    if (thread_.joinable()) thread_.join();
  }

  // Sends SIGUSR1 `count` times, each once the thread sleeps in the wait and after the previous
  // one was handled. Stops early when the wait has ended. Returns how many were handled.
  int InterruptWhileAsleep(int count) {
    while (tid_.load() == 0) std::this_thread::yield();
    int sent = 0;
    for (; sent < count && !done_.load(); ++sent) {
      while (ThreadState(tid_.load()) != 'S' && !done_.load()) std::this_thread::yield();
      if (done_.load()) break;
      const int before = g_signals.load();
      ::pthread_kill(thread_.native_handle(), SIGUSR1);
      while (g_signals.load() == before) std::this_thread::yield();
    }
    return sent;
  }

  void Join() { thread_.join(); }
  const Result<int>& result() const { return result_; }
  short revents() const { return revents_; }
  uint64_t elapsed_ms() const { return elapsed_ms_; }

 private:
  std::thread thread_;
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> done_{false};
  uint64_t start_ms_ = 0, elapsed_ms_ = 0;
  Result<int> result_ = 0;
  short revents_ = 0;
};

}  // namespace

TEST_CASE("shm wait: a wait interrupted by signals resumes and sees the wake-up that follows") {
  CountedSignal counted;
  SocketPair pair;
  Waiter waiter(pair.fd[0], 60 * 1000);
  CHECK(waiter.InterruptWhileAsleep(3) == 3);
  PostWakeUp(pair.fd[1]);
  waiter.Join();
  CHECK(g_signals.load() == 3);
  // An early return on EINTR would give 0 or an error here, before the byte was sent.
  REQUIRE(waiter.result().ok());
  CHECK(*waiter.result() == 1);
  CHECK((waiter.revents() & POLLIN) != 0);
}

TEST_CASE("shm wait: a wait with a deadline times out, signals or not") {
  SocketPair pair;
  SUBCASE("nothing happens") {
    Waiter waiter(pair.fd[0], 30);
    waiter.Join();
    REQUIRE(waiter.result().ok());
    CHECK(*waiter.result() == 0);
    CHECK(waiter.elapsed_ms() >= 30);
  }
  SUBCASE("signals during the wait do not end it early") {
    CountedSignal counted;
    Waiter waiter(pair.fd[0], 500);
    const int handled = waiter.InterruptWhileAsleep(3);
    waiter.Join();
    CHECK(handled >= 1);
    REQUIRE(waiter.result().ok());
    CHECK(*waiter.result() == 0);
    CHECK(waiter.elapsed_ms() >= 500);  // the time left, not a fresh timeout nor none
  }
}

TEST_CASE("shm wait: wake-ups are drained in one look, and a closed peer is told apart") {
  SocketPair pair;
  pollfd p{pair.fd[0], POLLIN, 0};
  for (int i = 0; i < 3; ++i) PostWakeUp(pair.fd[1]);
  Result<int> ready = WaitForWakeUp(&p, 1, 0);
  REQUIRE(ready.ok());
  CHECK(*ready == 1);
  CHECK(DrainWakeUps(pair.fd[0]));
  p.revents = 0;
  ready = WaitForWakeUp(&p, 1, 0);
  REQUIRE(ready.ok());
  CHECK(*ready == 0);  // all three went in one drain

  // A peer that writes without end: one drain is bounded and leaves the rest for the next wait.
  std::string flood(64 * 1024, 'x');
  ssize_t written = ::send(pair.fd[1], flood.data(), flood.size(), MSG_DONTWAIT);
  REQUIRE(written > 16 * 1024);
  CHECK(DrainWakeUps(pair.fd[0]));
  ready = WaitForWakeUp(&p, 1, 0);
  REQUIRE(ready.ok());
  CHECK(*ready == 1);
  while (::recv(pair.fd[0], flood.data(), flood.size(), MSG_DONTWAIT) > 0) {
  }

  ::close(pair.fd[1]);
  pair.fd[1] = -1;
  CHECK_FALSE(DrainWakeUps(pair.fd[0]));
  PostWakeUp(pair.fd[0]);  // to a gone peer: no SIGPIPE, no error
}
