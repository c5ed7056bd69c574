#include "tests/faults/fault_injection.h"

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
#include "tests/faults/oom_fault_model.h"
#include "worker/sandbox/landlock.h"

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
  if ((main.rfind("oom_over:", 0) == 0 || main.rfind("slowbatch:", 0) == 0) &&
      main.find('@') == std::string::npos) {
    main += "@0";
  }
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
    } else if (kind == "slowbatch" && !arg.empty()) {
      f.kind = Fault::Kind::kSlowBatch;
      f.delay_ms = std::stoi(arg);
      if (f.delay_ms <= 0 || f.delay_ms > 60000) return bad();
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
  if (f.IsEscape() && !f.once_path.empty()) return bad();  // an escape is tried every time
  return f;
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

Status TryEscape(const Fault& f) {
  Attempt a = Try(f);
  std::string name = std::string("test fault ") + EscapeName(f.kind) + ": " + a.what;
  if (a.error == 0) {
    LogWarn(name + " escaped the sandbox");
    return Status::Ok();
  }
  LogWarn(name + " refused: " + std::strerror(a.error));
  return Status(StatusCode::kWorkerFailed, name + " refused: " + std::strerror(a.error));
}

// Overwrites every span with garbage: random bytes, with every other 64-byte block all 0xff (the
// largest index, state, size).
size_t Scribble(const std::vector<SharedSpan>& spans) {
  size_t total = 0;
  for (const SharedSpan& r : spans) {
    auto* p = static_cast<uint8_t*>(r.data);
    for (size_t i = 0; i < r.bytes; i += 256) {
      size_t n = std::min<size_t>(256, r.bytes - i);
      if (::getrandom(p + i, n, 0) != static_cast<ssize_t>(n)) std::memset(p + i, 0xa5, n);
    }
    for (size_t i = 64; i < r.bytes; i += 128) {
      std::memset(p + i, 0xff, std::min<size_t>(64, r.bytes - i));
    }
    total += r.bytes;
  }
  return total;
}

}  // namespace

FaultHooks::~FaultHooks() {
  if (once_fd_ >= 0) ::close(once_fd_);
}

Result<std::vector<int>> FaultHooks::BeforeSandbox() {
  if (fault_.once_path.empty()) return std::vector<int>{};
  // Created here, outside the sandbox, which lets no worker create a file: inside it the winner
  // only appends to it (FirstTime).
  once_fd_ = ::open(fault_.once_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (once_fd_ < 0) {
    return Status(StatusCode::kIo, std::string(kFaultEnvVar) + ": once=" + fault_.once_path + ": " +
                                       std::strerror(errno));
  }
  return std::vector<int>{once_fd_};
}

void FaultHooks::AdjustSandbox(SandboxOptions& options) {
  auto on = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, "1") == 0;
  };
  if (on("FRAMEMILL_TEST_NO_LANDLOCK")) options.landlock_absent = LandlockAbsentReason(-ENOSYS);
  if (on("FRAMEMILL_TEST_NO_MOUNT_NS")) {
    options.mount_namespace_absent = "FRAMEMILL_TEST_NO_MOUNT_NS is set";
  }
}

bool FaultHooks::FirstTime() {
  if (fault_.once_path.empty()) return true;
  // O_APPEND puts each write at the end of the file, atomically: the worker whose byte landed at
  // offset 0 was the first, even when two reach the fault at once. (Each worker opened the file
  // itself, so the offset it reads back is its own write's.)
  if (once_fd_ < 0 || ::write(once_fd_, "1", 1) != 1) return false;
  return ::lseek(once_fd_, 0, SEEK_CUR) == 1;
}

bool FaultHooks::Fires(int64_t first, int64_t count) {
  if (fault_.kind == Fault::Kind::kNone || fault_.kind == Fault::Kind::kSlowLoad ||
      fault_.kind == Fault::Kind::kSlowBatch || fault_.kind == Fault::Kind::kOomOver ||
      fault_.IsEscape() || fault_.frame < first || fault_.frame >= first + count) {
    return false;
  }
  return FirstTime();
}

std::unique_ptr<FrameModel> FaultHooks::WrapModel(std::unique_ptr<FrameModel> model) {
  if (fault_.kind != Fault::Kind::kOomOver) return model;
  LogWarn("test fault injection: model calls over " + std::to_string(fault_.oom_over_mb) +
          " MiB of input run out of memory");
  return std::make_unique<OomFaultModel>(std::move(model), fault_.oom_over_mb);
}

void FaultHooks::BeforeReady() {
  if (fault_.kind != Fault::Kind::kSlowLoad || !FirstTime()) return;
  uint64_t until = MonotonicMs() + static_cast<uint64_t>(fault_.delay_ms);
  while (MonotonicMs() < until) ::usleep(10 * 1000);
}

Status FaultHooks::BeforeChunk(int64_t first, int64_t count) {
  if (!fault_.IsEscape() || fault_.frame < first || fault_.frame >= first + count) {
    return Status::Ok();
  }
  return TryEscape(fault_);
}

void FaultHooks::BeforeBatch(int64_t first, int64_t count, const std::vector<SharedSpan>& shared) {
  if (fault_.kind == Fault::Kind::kSlowBatch) {
    ::usleep(static_cast<useconds_t>(fault_.delay_ms) * 1000);
    return;
  }
  if (!Fires(first, count)) return;
  if (fault_.kind == Fault::Kind::kScribble) {
    const size_t total = Scribble(shared);
    LogWarn("test fault injection: scribbled " + std::to_string(total) +
            " bytes of shared memory at frame " + std::to_string(fault_.frame));
    return;
  }
  const char* what = fault_.kind == Fault::Kind::kCrash  ? "crash"
                     : fault_.kind == Fault::Kind::kHang ? "hang"
                                                         : "exit";
  LogWarn(std::string("test fault injection: ") + what + " at frame " +
          std::to_string(fault_.frame));
  FlushLog();
  switch (fault_.kind) {
    case Fault::Kind::kCrash:
      std::abort();
    case Fault::Kind::kExit:
      std::_Exit(fault_.exit_code);
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

}  // namespace framemill
