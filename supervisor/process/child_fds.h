// The descriptors a child process is given, and how it is ended. framemill opens every file
// O_CLOEXEC; a child that must read or write one gets it as /proc/self/fd/N of a descriptor it
// inherits at the same number N. ChildFds, passed to a boost::process::child, runs in the forked
// child before exec: it marks every descriptor above 2 close-on-exec (close_range), so that nothing
// another thread opened without O_CLOEXEC leaks into the child, then clears the flag on the
// descriptors given; asked, it also makes the child nicer than its parent (setpriority).
#pragma once

#include <csignal>
#include <cerrno>
#include <sys/resource.h>
#include <system_error>
#include <vector>

#include <boost/process/child.hpp>
#include <boost/process/extend.hpp>

namespace framemill {

// Async-signal-safe: runs between fork and exec. Marks descriptors > 2 close-on-exec except
// those in `keep` (kept open across exec at the same numbers).
void KeepOnlyDescriptors(const int* keep, size_t count);

// Async-signal-safe: raises the calling process's niceness by `more` (clamped to 19); nothing
// when `more` is 0. A failure leaves it as it was (a child is never refused for its priority).
inline void BeNicer(int more) {
  if (more <= 0) return;
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0) return;
  (void)::setpriority(PRIO_PROCESS, 0, now + more > 19 ? 19 : now + more);
}

struct ChildFds : boost::process::extend::handler {
  // `nicer`: how much nicer than the parent the child runs (Launch::nicer); threads the child
  // makes inherit it.
  explicit ChildFds(std::vector<int> fds, int nicer = 0) : keep(std::move(fds)), nicer(nicer) {}
  template <class Executor>
  void on_exec_setup(Executor&) const {
    KeepOnlyDescriptors(keep.data(), keep.size());
    BeNicer(nicer);
  }
  std::vector<int> keep;
  int nicer = 0;
};

// Ends `child` for good: a child still running gets SIGKILL, and is waited for (blocking) in any
// case, so that no zombie is left. (Boost 1.74's child::terminate, also run by ~child, sends
// SIGKILL and then calls waitpid with WNOHANG, which comes too early for a child that has not
// died yet: that left a zombie ffmpeg after every failed job.)
inline void KillAndReap(boost::process::child& child) {
  if (!child.valid()) return;
  std::error_code ec;
  if (child.running(ec)) ::kill(child.id(), SIGKILL);
  child.wait(ec);  // returns at once for a child already reaped
}

// Runs KillAndReap when it goes out of scope: for every path out of a function, exceptions too.
class ReapOnExit {
 public:
  explicit ReapOnExit(boost::process::child& child) : child_(child) {}
  ~ReapOnExit() { KillAndReap(child_); }
  ReapOnExit(const ReapOnExit&) = delete;
  ReapOnExit& operator=(const ReapOnExit&) = delete;

 private:
  boost::process::child& child_;
};

}  // namespace framemill
