// A process's memory as the kernel counts it in /proc/<pid>/status.
#pragma once

#include <cstdint>

namespace framemill {

struct ProcMemory {
  // RssAnon + RssFile: the process's own resident memory, current. Plain RSS also counts the
  // shared frame arena's pages the process has touched, which would make every worker (and the
  // supervisor) look hundreds of MiB bigger than it is.
  uint64_t private_bytes = 0;
  uint64_t peak_bytes = 0;  // VmHWM: the peak of plain RSS, shared pages included
};

// `pid` 0 = this process. All zero when the file cannot be read (the process is gone).
ProcMemory ReadProcMemory(int pid = 0);

}  // namespace framemill
