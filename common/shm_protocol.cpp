#include "common/shm_protocol.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/shm_validate.h"

namespace framemill {
namespace {

// Reads of DrainWakeUps per call: 4 KiB of wake-ups, far more than a healthy peer leaves.
constexpr int kMaxDrainReads = 16;

// A fresh object of `bytes` ("<what>-<random>") with a Header constructed at its start and its
// magic, kProtocolVersion and size written; *header points at it (in the object's mapping).
template <typename Header>
Result<SharedMemory> CreateWithHeader(const char* what, size_t bytes, uint64_t magic,
                                      Header** header, size_t reserved = SIZE_MAX,
                                      const SharedMemoryScope* scope = nullptr) {
  Result<SharedMemory> shm = SharedMemory::Create(what, bytes, reserved, scope);
  if (!shm.ok()) return shm;
  *header = new (shm->data()) Header();
  (*header)->magic = magic;
  (*header)->version = kProtocolVersion;
  (*header)->header_bytes = sizeof(Header);
  return shm;
}

}  // namespace

uint64_t ArenaSlotsWanted(const ArenaDemand& demand) {
  uint64_t wanted = static_cast<uint64_t>(demand.workers) * kInflightPerWorker + kArenaSpareSlots;
  if (demand.encoders > 1) {
    wanted += static_cast<uint64_t>(demand.encoders * demand.chunks_per_segment);
  }
  return std::min<uint64_t>(wanted, static_cast<uint64_t>(demand.chunks) + 1);
}

// Every field is compared below: a field added to ArenaGeometry must be added there too.
static_assert(sizeof(ArenaGeometry) == 80, "ArenaGeometry changed: update SameArenaGeometry");

bool SameArenaGeometry(const ArenaGeometry& a, const ArenaGeometry& b) {
  return a.slot_count == b.slot_count && a.chunk_frames == b.chunk_frames &&
         a.in_width == b.in_width && a.in_height == b.in_height &&
         a.out_width == b.out_width && a.out_height == b.out_height &&
         a.in_format == b.in_format && a.in_matrix == b.in_matrix &&
         a.in_full_range == b.in_full_range && a.out_format == b.out_format &&
         a.slot_bytes == b.slot_bytes && a.data_offset == b.data_offset &&
         a.total_bytes == b.total_bytes && a.face_slots == b.face_slots &&
         a.face_size == b.face_size && a.face_blend == b.face_blend &&
         a.flags == b.flags;
}

bool ArenaHolds(const ArenaGeometry& have, const ArenaGeometry& want) {
  if (have.slot_count < want.slot_count) return false;
  ArenaGeometry w = want;
  w.slot_count = have.slot_count;
  w.total_bytes = have.total_bytes;
  w.flags = have.flags;
  return SameArenaGeometry(have, w);
}

bool WorthPageLocking(const ArenaGeometry& g, uint64_t frames) {
  const long double moved =
      static_cast<long double>(frames) * (g.InFrameBytes() + g.OutFrameBytes());
  return moved >= 20.0L * static_cast<long double>(g.total_bytes);
}

Result<ArenaGeometry> SizeArena(const ArenaGeometry& shape, const ArenaDemand& demand) {
  ArenaGeometry g = shape;
  const uint64_t slot_bytes = AlignUp(g.FacesOffset() + g.FacesBytes(), kSlotAlignment);
  if (slot_bytes == 0) {
    return Status(StatusCode::kInternal, "an arena slot must hold at least one frame");
  }
  const uint64_t budget = static_cast<uint64_t>(demand.arena_mb) << 20;
  const uint64_t slots = std::min<uint64_t>(budget / slot_bytes, ArenaSlotsWanted(demand));
  if (slots < 2) {
    return Status(StatusCode::kInvalidJob,
                  "arena_mb=" + std::to_string(demand.arena_mb) + " holds fewer than 2 chunks of " +
                      std::to_string(g.chunk_frames) + " frames at " + std::to_string(g.in_width) +
                      "x" + std::to_string(g.in_height) + " -> " + std::to_string(g.out_width) +
                      "x" + std::to_string(g.out_height) + " (" + std::to_string(slot_bytes >> 20) +
                      " MiB each): lower chunk_frames or raise arena_mb");
  }
  g.slot_count = static_cast<uint32_t>(slots);
  g.slot_bytes = slot_bytes;
  g.data_offset = AlignUp(sizeof(ArenaHeader), kSlotAlignment);
  g.total_bytes = g.data_offset + slots * slot_bytes;
  return g;
}

std::pair<uint64_t, uint64_t> ArenaSlotRange(const ArenaGeometry& g, uint32_t slot) {
  return {g.data_offset + uint64_t{slot} * g.slot_bytes, g.slot_bytes};
}

Result<SharedMemory> CreateFrameArena(const ArenaGeometry& g, bool all_slots) {
  if (Status valid = ValidateArenaGeometry(g, g.total_bytes); !valid.ok()) {
    return Status(StatusCode::kInternal, valid.message());
  }
  ArenaHeader* header = nullptr;
  const uint64_t first_slot_end = g.data_offset + g.slot_bytes;
  Result<SharedMemory> shm = CreateWithHeader("arena", g.total_bytes, kArenaMagic, &header,
                                              all_slots ? SIZE_MAX : first_slot_end);
  if (shm.ok()) header->geometry = g;
  return shm;
}

Result<SharedMemory> CreateControlBlock(uint32_t channel_index, int32_t supervisor_pid,
                                        const SharedMemoryScope* scope) {
  ControlHeader* control = nullptr;
  Result<SharedMemory> shm =
      CreateWithHeader("ctl", sizeof(ControlHeader), kControlMagic, &control, SIZE_MAX, scope);
  if (!shm.ok()) return shm;
  control->supervisor_pid = supervisor_pid;
  control->channel_index = channel_index;
  control->channel.state.store(static_cast<uint32_t>(WorkerState::kStarting),
                               std::memory_order_release);
  return shm;
}

Result<int> WaitForWakeUp(pollfd* fds, size_t count, int timeout_ms) {
  // A relative timeout on the monotonic clock: a step of the wall clock plays no part.
  const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(std::max(timeout_ms, 0));
  int wait_ms = timeout_ms;
  while (true) {
    int n = ::poll(fds, static_cast<nfds_t>(count), wait_ms);
    if (n >= 0) return n;
    if (errno != EINTR)
      return Status(StatusCode::kIo, std::string("poll: ") + std::strerror(errno));
    if (timeout_ms < 0) continue;
    const uint64_t now = MonotonicMs();
    if (now >= deadline) return 0;
    wait_ms = static_cast<int>(deadline - now);
  }
}

void PostWakeUp(int fd) {
  const char byte = 1;
  (void)!::send(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool DrainWakeUps(int fd) {
  char buf[256];
  ssize_t n = 0;
  for (int reads = 0; reads < kMaxDrainReads; ++reads) {
    n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
  }
  return n != 0;
}

}  // namespace framemill
