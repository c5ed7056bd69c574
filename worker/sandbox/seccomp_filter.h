// A seccomp-BPF system-call filter for the worker, written as a classic BPF program (no
// libseccomp: the GPU machines do not have it).
//
// It is a deny list, not an allow list: LibTorch, its thread pools and the CUDA driver use a wide
// and changing set of system calls, and an allow list that misses one kills a worker on one
// machine and not another. What it denies is what a worker never needs and an escaping model
// would: new processes and programs, other processes' memory, namespaces and mounts, kernel
// keyrings, BPF, perf, io_uring (which reaches sockets and files without passing this filter),
// and sockets of every family but the few allowed. Denied calls fail with EPERM (clone3 with
// ENOSYS, so that glibc falls back to clone, whose flags the filter can read), so a model sees
// an error and the worker reports it; only a call from another architecture's ABI kills.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

struct SeccompPolicy {
  // Address families socket() may create; every other family gets EPERM. AF_UNIX alone by
  // default (the CUDA driver and NVML need no other; add AF_NETLINK here if a driver does).
  std::vector<int> socket_families;
};

// The default policy described above.
SeccompPolicy DefaultSeccompPolicy();

// One line per rule, for the debug listing ("deny execve: EPERM", "socket: only AF_UNIX", ...).
std::vector<std::string> DescribeSeccompPolicy(const SeccompPolicy& policy);

// Installs the filter for every thread of the process (SECCOMP_FILTER_FLAG_TSYNC). Needs
// no_new_privs set first (or CAP_SYS_ADMIN). Permanent; a failure leaves no filter installed.
Status InstallSeccompFilter(const SeccompPolicy& policy);

}  // namespace framemill
