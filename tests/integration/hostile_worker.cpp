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
#include <cerrno>
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
#include "common/shared_memory.h"
#include "common/shm_protocol.h"

using namespace framemill;

int main(int argc, char** argv) {
  std::string control;
  int fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--control") == 0) control = argv[i + 1];
    if (std::strcmp(argv[i], "--wake-fd") == 0) fd = std::atoi(argv[i + 1]);
  }
  const char* env = std::getenv("FRAMEMILL_HOSTILE");
  const std::string mode = env ? env : "";
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
