#include "worker/sandbox/seccomp_filter.h"

#include <cstdint>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace framemill {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
constexpr uint32_t kX32SyscallBit = 0x40000000;  // x32 ABI calls share the arch: refuse them
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "framemill's worker seccomp filter knows x86-64 and aarch64 only"
#endif

#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

struct Syscall {
  long nr;
  const char* name;
};

#define FM_SYSCALL(name) \
  Syscall { __NR_##name, #name }

// Denied with EPERM. Grouped by what they would give an escaped model.
const Syscall kDenied[] = {
// New processes and programs (threads stay possible: clone with CLONE_THREAD, below).
#ifdef __NR_fork
    FM_SYSCALL(fork),
#endif
#ifdef __NR_vfork
    FM_SYSCALL(vfork),
#endif
    FM_SYSCALL(execve),
    FM_SYSCALL(execveat),
    // Other processes: tracing, their memory, their descriptors.
    FM_SYSCALL(ptrace),
    FM_SYSCALL(process_vm_readv),
    FM_SYSCALL(process_vm_writev),
    FM_SYSCALL(process_madvise),
    FM_SYSCALL(pidfd_getfd),
    FM_SYSCALL(kcmp),
    // Namespaces, mounts, roots (the sandbox's own unshare runs before the filter).
    FM_SYSCALL(unshare),
    FM_SYSCALL(setns),
    FM_SYSCALL(mount),
    FM_SYSCALL(umount2),
    FM_SYSCALL(pivot_root),
    FM_SYSCALL(chroot),
    FM_SYSCALL(open_tree),
    FM_SYSCALL(move_mount),
    FM_SYSCALL(fsopen),
    FM_SYSCALL(fsconfig),
    FM_SYSCALL(fsmount),
    FM_SYSCALL(fspick),
    FM_SYSCALL(mount_setattr),
    // Files by handle (bypass path checks).
    FM_SYSCALL(open_by_handle_at),
    FM_SYSCALL(name_to_handle_at),
    // Asynchronous I/O that reaches sockets and files without passing through this filter.
    FM_SYSCALL(io_uring_setup),
    FM_SYSCALL(io_uring_enter),
    FM_SYSCALL(io_uring_register),
    // Kernel attack surface a worker has no use for.
    FM_SYSCALL(keyctl),
    FM_SYSCALL(add_key),
    FM_SYSCALL(request_key),
    FM_SYSCALL(bpf),
    FM_SYSCALL(perf_event_open),
    FM_SYSCALL(userfaultfd),
    FM_SYSCALL(fanotify_init),
    FM_SYSCALL(syslog),
    FM_SYSCALL(acct),
    FM_SYSCALL(quotactl),
    FM_SYSCALL(swapon),
    FM_SYSCALL(swapoff),
    FM_SYSCALL(reboot),
    FM_SYSCALL(kexec_load),
    FM_SYSCALL(kexec_file_load),
    FM_SYSCALL(init_module),
    FM_SYSCALL(finit_module),
    FM_SYSCALL(delete_module),
    FM_SYSCALL(settimeofday),
    FM_SYSCALL(clock_settime),
    FM_SYSCALL(clock_adjtime),
    FM_SYSCALL(adjtimex),
    FM_SYSCALL(sethostname),
    FM_SYSCALL(setdomainname),
    FM_SYSCALL(vhangup),
#ifdef __NR_iopl
    FM_SYSCALL(iopl),
    FM_SYSCALL(ioperm),
#endif
#ifdef __NR_uselib
    FM_SYSCALL(uselib),
#endif
};

#undef FM_SYSCALL

sock_filter Stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter Jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

// Offset of the low 32 bits of argument `i` in seccomp_data.
constexpr uint32_t ArgLow(int i) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i) +
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
         0;
#else
         4;
#endif
}

std::vector<sock_filter> Program(const SeccompPolicy& policy) {
  const uint32_t kDeny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  std::vector<sock_filter> p;
  // A call through another architecture's ABI would dodge every number below: kill it.
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  p.push_back(Jump(BPF_JMP | BPF_JGE | BPF_K, kX32SyscallBit, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, kDeny));
#endif
  for (const Syscall& s : kDenied) {
    p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(s.nr), 0, 1));
    p.push_back(Stmt(BPF_RET | BPF_K, kDeny));
  }
  // clone3 passes its flags in memory the filter cannot read: ENOSYS makes glibc use clone.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
  // clone: threads only.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, ArgLow(0)));
  p.push_back(Jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, kDeny));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  // socket: the allowed families only. Layout: load the family, one test per family jumping to
  // the final ALLOW, then DENY, then ALLOW.
  const size_t n = policy.socket_families.size();
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, static_cast<uint8_t>(n + 3)));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, ArgLow(0)));
  for (size_t i = 0; i < n; ++i) {
    p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(policy.socket_families[i]),
                     static_cast<uint8_t>(n - i), 0));
  }
  p.push_back(Stmt(BPF_RET | BPF_K, kDeny));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));  // every other call
  return p;
}

std::string FamilyName(int family) {
  switch (family) {
    case AF_UNIX:
      return "AF_UNIX";
    case AF_INET:
      return "AF_INET";
    case AF_INET6:
      return "AF_INET6";
    case AF_NETLINK:
      return "AF_NETLINK";
    default:
      return "family " + std::to_string(family);
  }
}

}  // namespace

SeccompPolicy DefaultSeccompPolicy() {
  SeccompPolicy p;
  p.socket_families = {AF_UNIX};
  return p;
}

std::vector<std::string> DescribeSeccompPolicy(const SeccompPolicy& policy) {
  std::vector<std::string> lines;
  std::string denied;
  for (const Syscall& s : kDenied) denied += (denied.empty() ? "" : " ") + std::string(s.name);
  lines.push_back("seccomp: EPERM for " + denied);
  lines.push_back("seccomp: clone3 -> ENOSYS; clone only with CLONE_THREAD, else EPERM");
  std::string families;
  for (int f : policy.socket_families) families += (families.empty() ? "" : ", ") + FamilyName(f);
  lines.push_back("seccomp: socket only for " + (families.empty() ? "no family" : families) +
                  ", else EPERM");
  lines.push_back("seccomp: another architecture's system calls kill the process");
  return lines;
}

Status InstallSeccompFilter(const SeccompPolicy& policy) {
  if (policy.socket_families.size() > 200) {
    return Status(StatusCode::kInternal, "seccomp policy: too many socket families");
  }
  std::vector<sock_filter> program = Program(policy);
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program.size());
  prog.filter = program.data();
  long r = ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (r < 0) {
    return Status(StatusCode::kIo,
                  std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno));
  }
  if (r > 0) {  // TSYNC: the thread that could not take the filter (then none took it)
    return Status(StatusCode::kIo, "seccomp: thread " + std::to_string(r) +
                                       " could not be synchronised with the filter");
  }
  return Status::Ok();
}

}  // namespace framemill
