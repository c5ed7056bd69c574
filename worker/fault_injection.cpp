#include "worker/fault_injection.h"

#include <cstdint>
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log_lines.h"

namespace framemill {

Result<Fault> ParseFault(const std::string& spec) {
  Fault f;
  if (spec.empty()) return f;
  auto bad = [&] {
    return Status(StatusCode::kInvalidConfig,
                  std::string(kFaultEnvVar) + "=\"" + spec +
                      "\": expected crash@N, hang@N, exit:K@N, scribble@N, slowload:MS@0 or "
                      "oom_over:MB, optionally "
                      "followed by ,once=PATH, or an escape: connect:PORT@N, socket@N, "
                      "fork:MARKER@N, exec:MARKER@N, memory@N, signal@N");
  };
  std::string main = spec;
  size_t comma = spec.find(',');
  if (comma != std::string::npos) {
    main = spec.substr(0, comma);
    std::string opt = spec.substr(comma + 1);
    if (opt.rfind("once=", 0) != 0 || opt.size() <= 5) return bad();
    f.once_path = opt.substr(5);
  }
  if (main.rfind("oom_over:", 0) == 0 && main.find('@') == std::string::npos) main += "@0";
  size_t at = main.rfind('@');
  if (at == std::string::npos) return bad();
  std::string kind = main.substr(0, at);
  std::string arg;
  size_t colon = kind.find(':');
  if (colon != std::string::npos) {
    arg = kind.substr(colon + 1);
    kind = kind.substr(0, colon);
  }
  try {
    f.frame = std::stoll(main.substr(at + 1));
    if (kind == "crash" && arg.empty()) {
      f.kind = Fault::Kind::kCrash;
    } else if (kind == "hang" && arg.empty()) {
      f.kind = Fault::Kind::kHang;
    } else if (kind == "scribble" && arg.empty()) {
      f.kind = Fault::Kind::kScribble;
    } else if (kind == "slowload" && !arg.empty()) {
      f.kind = Fault::Kind::kSlowLoad;
      f.delay_ms = std::stoi(arg);
      if (f.delay_ms <= 0 || f.delay_ms > 600000) return bad();
    } else if (kind == "oom_over" && !arg.empty()) {
      f.kind = Fault::Kind::kOomOver;
      f.oom_over_mb = std::stoll(arg);
      if (f.oom_over_mb < 0 || f.oom_over_mb > (int64_t{1} << 30)) return bad();
    } else if (kind == "exit" && !arg.empty()) {
      f.kind = Fault::Kind::kExit;
      f.exit_code = std::stoi(arg);
    } else if (kind == "connect" && !arg.empty()) {
      f.kind = Fault::Kind::kConnect;
      f.port = std::stoi(arg);
      if (f.port <= 0 || f.port > 65535) return bad();
    } else if (kind == "socket" && arg.empty()) {
      f.kind = Fault::Kind::kSocket;
    } else if ((kind == "fork" || kind == "exec") && !arg.empty()) {
      f.kind = kind == "fork" ? Fault::Kind::kFork : Fault::Kind::kExec;
      f.marker = arg;
    } else if (kind == "memory" && arg.empty()) {
      f.kind = Fault::Kind::kMemory;
    } else if (kind == "signal" && arg.empty()) {
      f.kind = Fault::Kind::kSignal;
    } else {
      return bad();
    }
  } catch (const std::exception&) {
    return bad();
  }
  if (f.IsEscape() && !f.once_path.empty()) return bad();  // a sandbox could not create it
  return f;
}

namespace {

// Is frame f.frame in [first, first + count), and (with once=PATH) is this the first time?
// Escapes are TryEscapeFault's.
bool FirstTime(const Fault& f);

bool Fires(const Fault& f, int64_t first, int64_t count) {
  if (f.kind == Fault::Kind::kNone || f.kind == Fault::Kind::kSlowLoad ||
      f.kind == Fault::Kind::kOomOver || f.IsEscape() || f.frame < first ||
      f.frame >= first + count) {
    return false;
  }
  return FirstTime(f);
}

// With once=PATH: is this the first time (this worker created PATH)? Without: always.
bool FirstTime(const Fault& f) {
  if (!f.once_path.empty()) {
    // O_EXCL: exactly one worker wins, even when two reach the frame at once.
    int fd = ::open(f.once_path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return false;
    ::close(fd);
  }
  return true;
}

}  // namespace

void MaybeDelayReady(const Fault& fault) {
  if (fault.kind != Fault::Kind::kSlowLoad || !FirstTime(fault)) return;
  uint64_t until = MonotonicMs() + static_cast<uint64_t>(fault.delay_ms);
  while (MonotonicMs() < until) ::usleep(10 * 1000);
}

bool MaybeScribble(const Fault& f, int64_t first, int64_t count,
                   const std::vector<ScribbleRegion>& regions) {
  if (f.kind != Fault::Kind::kScribble || !Fires(f, first, count)) return false;
  size_t total = 0;
  for (const ScribbleRegion& r : regions) {
    auto* p = static_cast<uint8_t*>(r.data);
    // Random bytes, with every other 64-byte block all 0xff (the largest index, state, size).
    for (size_t i = 0; i < r.bytes; i += 256) {
      size_t n = std::min<size_t>(256, r.bytes - i);
      if (::getrandom(p + i, n, 0) != static_cast<ssize_t>(n)) std::memset(p + i, 0xa5, n);
    }
    for (size_t i = 64; i < r.bytes; i += 128) {
      std::memset(p + i, 0xff, std::min<size_t>(64, r.bytes - i));
    }
    total += r.bytes;
  }
  LogWarn("test fault injection: scribbled " + std::to_string(total) +
          " bytes of shared memory at frame " + std::to_string(f.frame));
  return true;
}

void MaybeInjectFault(const Fault& f, int64_t first, int64_t count) {
  if (f.kind == Fault::Kind::kScribble) return;  // MaybeScribble's
  if (!Fires(f, first, count)) return;
  const char* what = f.kind == Fault::Kind::kCrash  ? "crash"
                     : f.kind == Fault::Kind::kHang ? "hang"
                                                    : "exit";
  LogWarn(std::string("test fault injection: ") + what + " at frame " + std::to_string(f.frame));
  FlushLog();
  switch (f.kind) {
    case Fault::Kind::kCrash:
      std::abort();
    case Fault::Kind::kExit:
      std::_Exit(f.exit_code);
    case Fault::Kind::kHang: {
      // Like a process stuck in a driver call: no heartbeat, deaf to SIGTERM. Ignored for the
      // whole process: blocking it in this thread alone would let LibTorch's and CUDA's own
      // threads take the signal and die of it (seen on the GPU machine).
      ::signal(SIGTERM, SIG_IGN);
      for (;;) ::pause();
    }
    default:
      break;
  }
}

namespace {

// Writes `marker` from a process that got out (a forked child, an exec'd shell's parent).
void WriteMarker(const std::string& marker) {
  int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)::write(fd, "escaped\n", 8);
    ::close(fd);
  }
}

// What one escape attempt did: the errno of the refusal, or 0 when it went through.
struct Attempt {
  std::string what;
  int error = 0;
};

Attempt Try(const Fault& f) {
  switch (f.kind) {
    case Fault::Kind::kConnect: {
      std::string what = "connect to 127.0.0.1:" + std::to_string(f.port);
      int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (s < 0) return {what + " (socket(AF_INET, SOCK_STREAM))", errno};
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(f.port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      int r = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      int e = r == 0 ? 0 : errno;
      ::close(s);
      return {what, e};
    }
    case Fault::Kind::kSocket: {
      int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (s < 0) return {"socket(AF_INET, SOCK_DGRAM)", errno};
      ::close(s);
      return {"socket(AF_INET, SOCK_DGRAM)", 0};
    }
    case Fault::Kind::kFork: {
      pid_t pid = ::fork();
      if (pid < 0) return {"fork", errno};
      if (pid == 0) {
        WriteMarker(f.marker);
        std::_Exit(0);
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      return {"fork", 0};
    }
    case Fault::Kind::kExec: {
      FlushLog();
      // Only returns when refused; allowed, the worker is now a shell that writes the marker.
      ::execl("/bin/sh", "sh", "-c", "echo escaped > \"$1\"", "sh", f.marker.c_str(),
              static_cast<char*>(nullptr));
      return {"execve /bin/sh", errno};
    }
    case Fault::Kind::kMemory: {
      char local[8];
      static char remote[8];  // some address; what is there (if anything) does not matter
      iovec l{local, sizeof(local)};
      iovec r{remote, sizeof(remote)};
      ssize_t n = ::process_vm_readv(::getppid(), &l, 1, &r, 1, 0);
      // EFAULT or ESRCH would mean the call itself was allowed: only EPERM is a refusal.
      return {"process_vm_readv on the supervisor", n < 0 && errno == EPERM ? EPERM : 0};
    }
    case Fault::Kind::kSignal: {
      int r = ::kill(::getppid(), 0);
      return {"kill(supervisor, 0)", r == 0 ? 0 : errno};
    }
    default:
      return {"", 0};
  }
}

const char* EscapeName(Fault::Kind kind) {
  switch (kind) {
    case Fault::Kind::kConnect:
      return "connect";
    case Fault::Kind::kSocket:
      return "socket";
    case Fault::Kind::kFork:
      return "fork";
    case Fault::Kind::kExec:
      return "exec";
    case Fault::Kind::kMemory:
      return "memory";
    case Fault::Kind::kSignal:
      return "signal";
    default:
      return "?";
  }
}

}  // namespace

Status TryEscapeFault(const Fault& f, int64_t first, int64_t count) {
  if (!f.IsEscape() || f.frame < first || f.frame >= first + count) return Status::Ok();
  Attempt a = Try(f);
  std::string name = std::string("test fault ") + EscapeName(f.kind) + ": " + a.what;
  if (a.error == 0) {
    LogWarn(name + " escaped the sandbox");
    return Status::Ok();
  }
  LogWarn(name + " refused: " + std::strerror(a.error));
  return Status(StatusCode::kWorkerFailed, name + " refused: " + std::strerror(a.error));
}

}  // namespace framemill
