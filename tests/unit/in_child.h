// Runs a check in a forked child and collects what it reports: for the tests of things that
// cannot be undone in a process (a sandbox, a private root). Header-only, for the unit tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace framemill::test {

// Runs `body` in a forked child (it may also write to `report_fd` itself); returns what it
// returned and wrote ("" = every check passed), plus a note if the child was killed by a signal.
inline std::string InChild(const std::function<std::string(int report_fd)>& body) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  std::fflush(nullptr);  // the child must not write the parent's buffered output again
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string msg = body(p[1]);
    (void)::write(p[1], msg.data(), msg.size());
    std::_Exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status))
    out += " (child killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  return out;
}

// The same for a body that only returns its report.
inline std::string InChild(const std::function<std::string()>& body) {
  return InChild([&](int) { return body(); });
}

}  // namespace framemill::test
