// A hostile stand-in for framemill-worker (config key worker_binary), for the shm security tests.
// It attaches like the real worker, reports a 1:1 model on "cpu", and answers each chunk by
// copying its input frames to its output slot (an identity model for rgb24 frames); then, as
// FRAMEMILL_HOSTILE says, it lies in one way a worker can:
//
//   foreign-chunk, wrong-slot, frames, message   a result that lies about its chunk
//   result-tail, request-head                    ring indices beyond what a ring can hold
//   state, heartbeat, probe                      an invalid state, heartbeat or probe size
//   flood                                        writes to the supervisor's socket without end,
//                                                blocking mode (answers are right)
//   closed-fd                                    closes its end of the socket (answers are right)
//   snoop                                        a snoop in the real sandbox
//                                                (worker/sandbox/sandbox.h,
//                                                as --sandbox says): at its first request it
//                                                opens its own control block and the request's
//                                                arena, then each path of FRAMEMILL_HOSTILE_SNOOP
//                                                (':' between them: another worker's or job's
//                                                objects) and lists the supervisor's shared-memory
//                                                directory, writes one line per try to stderr
//                                                ("snoop opened PATH", "snoop refused PATH: why")
//                                                and exits 0
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <map>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "worker/sandbox/sandbox.h"

using namespace framemill;

namespace {

std::string DirOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

// One try of the snoop: opens `path` read-write as a worker maps shared memory.
void TryOpen(const char* what, const std::string& path) {
  errno = 0;
  Result<SharedMemory> m = SharedMemory::Open(path);
  if (m.ok()) {
    std::fprintf(stderr, "snoop opened %s %s\n", what, path.c_str());
  } else {
    std::fprintf(stderr, "snoop refused %s %s: %s\n", what, path.c_str(), m.status().message().c_str());
  }
}

// Lists `dir` (the supervisor's shared-memory directory, or any other).
void TryList(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    std::fprintf(stderr, "snoop refused list %s: %s\n", dir.c_str(), std::strerror(errno));
    return;
  }
  int n = 0;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  std::fprintf(stderr, "snoop opened list %s: %d entries\n", dir.c_str(), n);
}

// The snoop at the first request (see the top of this file).
void Snoop(const std::string& control, const ChunkRequest& rq) {
  TryOpen("own-control", control);
  char arena[kNameBytes];
  std::memcpy(arena, rq.arena_name, sizeof(arena));
  arena[kNameBytes - 1] = '\0';
  TryOpen("own-arena", arena);
  const char* targets = std::getenv("FRAMEMILL_HOSTILE_SNOOP");
  std::string list = targets ? targets : "";
  for (size_t start = 0; start < list.size();) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) TryOpen("foreign", list.substr(start, end - start));
    start = end + 1;
  }
  TryList(DirOf(DirOf(control)));  // the supervisor's directory, above this worker's own
  std::fprintf(stderr, "snoop done\n");
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string control;
  int fd = -1;
  WorkerSandbox sandbox = WorkerSandbox::kOff;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--control") == 0) control = argv[i + 1];
    if (std::strcmp(argv[i], "--wake-fd") == 0) fd = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--sandbox") == 0) {
      sandbox = ParseWorkerSandbox(argv[i + 1]).value_or(WorkerSandbox::kRequired);
    }
  }
  const char* env = std::getenv("FRAMEMILL_HOSTILE");
  const std::string mode = env ? env : "";
  if (mode == "snoop") {
    // As the real worker does: the sandbox first, while this is one thread, then the attach.
    SandboxOptions options;
    options.mode = sandbox;
    options.control = control;
    options.keep_fds = {fd};
    Result<SandboxReport> report = ApplySandbox(options);
    if (!report.ok()) {
      std::fprintf(stderr, "snoop sandbox failed: %s\n", report.status().message().c_str());
      return 4;
    }
    std::fprintf(stderr, "snoop sandbox: %s\n", report->Summary().c_str());
  }
  Result<SharedMemory> shm = SharedMemory::Open(control);
  if (!shm.ok() || fd < 0) return 3;
  auto* block = static_cast<ControlHeader*>(shm->data());
  WorkerChannel& ch = block->channel;
  auto wake = [&] {
    const char b = 1;
    (void)!::send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  };
  ch.probe_out_width.store(mode == "probe" ? 0xffffffffu : kProbeSize);
  ch.probe_out_height.store(kProbeSize);
  CopyString(ch.device, "cpu");
  ch.telemetry.heartbeat_ms.store(MonotonicMs());
  ch.state.store(static_cast<uint32_t>(WorkerState::kReady));
  wake();
  if (mode == "flood") {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // our end only
    std::thread([fd] {
      char bytes[4096] = {};
      while (::write(fd, bytes, sizeof(bytes)) > 0 || errno == EINTR) {
      }
    }).detach();
  }
  if (mode == "closed-fd") ::close(fd);
  std::map<std::string, SharedMemory> arenas;
  while (::getppid() == block->supervisor_pid) {
    ch.telemetry.heartbeat_ms.store(mode == "heartbeat" ? UINT64_MAX / 2 : MonotonicMs());
    ChunkRequest rq{};
    if (ch.requests.TryPop(&rq) != PopResult::kItem) {
      if (mode == "closed-fd") {
        ::usleep(5000);
      } else {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
          char buf[64];
          (void)!::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        }
      }
      continue;
    }
    if (rq.kind == ChunkRequest::kStop) return 0;
    if (mode == "snoop") {
      Snoop(control, rq);
      return 0;
    }
    if (rq.kind != ChunkRequest::kChunk) continue;
    auto it = arenas.find(rq.arena_name);
    if (it == arenas.end()) {
      Result<SharedMemory> a = SharedMemory::Open(rq.arena_name);
      if (!a.ok()) return 3;
      it = arenas.emplace(rq.arena_name, std::move(*a)).first;
    }
    auto* base = static_cast<uint8_t*>(it->second.data());
    std::memcpy(rq.arena.SlotOut(base, rq.slot), rq.arena.SlotIn(base, rq.slot),
                rq.arena.InFrameBytes() * rq.frames);
    ChunkResult r{};
    r.chunk_id = rq.chunk_id;
    r.slot = rq.slot;
    r.frames_done = rq.frames;
    if (mode == "foreign-chunk") r.chunk_id += 1000;
    if (mode == "wrong-slot") r.slot += 1;
    if (mode == "frames") r.frames_done += 1;
    if (mode == "message") {
      r.error = 1;
      std::memset(r.message, 'x', sizeof(r.message));
    }
    if (mode == "state") ch.state.store(77);
    // Claims to have read requests that were never written (and then reads no more).
    if (mode == "request-head") ch.requests.head.store(ch.requests.tail.load() + 5);
    ch.telemetry.frames_done.fetch_add(rq.frames);
    ch.telemetry.chunks_done.fetch_add(1);
    while (!ch.results.TryPush(r)) ::usleep(1000);
    if (mode == "result-tail") ch.results.tail.fetch_add(1000);
    if (mode != "closed-fd") wake();
  }
  return 5;
}
