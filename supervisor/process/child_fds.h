// The descriptors a child process is given, and how it is ended. framemill opens every file
// O_CLOEXEC; a child that must read or write one gets it as /proc/self/fd/N of a descriptor it
// inherits at the same number N. ChildFds, passed to a boost::process::child, runs in the forked
// child before exec: it marks every descriptor above 2 close-on-exec (close_range), so that nothing
// another thread opened without O_CLOEXEC leaks into the child, then clears the flag on the
// descriptors given.
#pragma once

#include <csignal>
#include <system_error>
#include <vector>

#include <boost/process/child.hpp>
#include <boost/process/extend.hpp>

namespace framemill {

// Async-signal-safe: runs between fork and exec. Marks descriptors > 2 close-on-exec except
// those in `keep` (kept open across exec at the same numbers).
void KeepOnlyDescriptors(const int* keep, size_t count);

struct ChildFds : boost::process::extend::handler {
  explicit ChildFds(std::vector<int> fds) : keep(std::move(fds)) {}
  template <class Executor>
  void on_exec_setup(Executor&) const {
    KeepOnlyDescriptors(keep.data(), keep.size());
  }
  std::vector<int> keep;
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
