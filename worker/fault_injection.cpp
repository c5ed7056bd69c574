#include "worker/fault_injection.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log_lines.h"

namespace framemill {

Result<Fault> ParseFault(const std::string& spec) {
  Fault f;
  if (spec.empty()) return f;
  auto bad = [&] {
    return Status(StatusCode::kInvalidConfig,
                  std::string(kFaultEnvVar) + "=\"" + spec +
                      "\": expected crash@N, hang@N or "
                      "exit:K@N or scribble@N, optionally followed by ,once=PATH");
  };
  std::string main = spec;
  size_t comma = spec.find(',');
  if (comma != std::string::npos) {
    main = spec.substr(0, comma);
    std::string opt = spec.substr(comma + 1);
    if (opt.rfind("once=", 0) != 0 || opt.size() <= 5) return bad();
    f.once_path = opt.substr(5);
  }
  size_t at = main.find('@');
  if (at == std::string::npos) return bad();
  std::string kind = main.substr(0, at);
  try {
    f.frame = std::stoll(main.substr(at + 1));
    if (kind == "crash") {
      f.kind = Fault::Kind::kCrash;
    } else if (kind == "hang") {
      f.kind = Fault::Kind::kHang;
    } else if (kind == "scribble") {
      f.kind = Fault::Kind::kScribble;
    } else if (kind.rfind("exit:", 0) == 0) {
      f.kind = Fault::Kind::kExit;
      f.exit_code = std::stoi(kind.substr(5));
    } else {
      return bad();
    }
  } catch (const std::exception&) {
    return bad();
  }
  return f;
}

namespace {

// Is frame f.frame in [first, first + count), and (with once=PATH) is this the first time?
bool Fires(const Fault& f, int64_t first, int64_t count) {
  if (f.kind == Fault::Kind::kNone || f.frame < first || f.frame >= first + count) return false;
  if (!f.once_path.empty()) {
    // O_EXCL: exactly one worker wins, even when two reach the frame at once.
    int fd = ::open(f.once_path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return false;
    ::close(fd);
  }
  return true;
}

}  // namespace

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
    case Fault::Kind::kNone:
    case Fault::Kind::kScribble:
      break;
  }
}

}  // namespace framemill
