// The descriptors a child process is given. framemill opens every file O_CLOEXEC; a child that
// must read or write one gets it as /proc/self/fd/N of a descriptor it inherits at the same
// number N. ChildFds, passed to a boost::process::child, runs in the forked child before exec:
// it marks every descriptor above 2 close-on-exec (close_range), so that nothing another thread
// opened without O_CLOEXEC leaks into the child, then clears the flag on the descriptors given.
#pragma once

#include <vector>

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

}  // namespace framemill
