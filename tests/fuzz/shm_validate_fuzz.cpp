// libFuzzer target for every check the supervisor applies to memory a worker can write
// (common/shm_validate.h, common/spsc_ring.h's checked sides). The input is cut into images of
// what a hostile worker controls: a control block (state, probe, device, telemetry, both rings'
// indices and items), a result, and an arena geometry with a mapping size, and each goes through
// the validators the way WorkerPool and Dispatcher use them. A crash, a sanitizer report, a hang
// or an accepted value that breaks the checks' promises (asserted below) is a finding.
//
//   clang++ -std=c++17 -fsanitize=fuzzer,address,undefined -I. tests/fuzz/shm_validate_fuzz.cpp \
//       common/shm_validate.cpp common/status.cpp
//   ./a.out tests/fuzz/corpus/shm_validate
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "common/shm_protocol.h"
#include "common/shm_validate.h"
#include "common/spsc_ring.h"

using namespace framemill;

namespace {

// Hands out the input in pieces; past its end, zeros.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void Take(void* out, size_t n) {
    size_t have = pos_ < size_ ? std::min(n, size_ - pos_) : 0;
    if (have > 0) std::memcpy(out, data_ + pos_, have);
    std::memset(static_cast<uint8_t*>(out) + have, 0, n - have);
    pos_ += have;
  }
  template <typename T>
  T Get() {
    T v;
    Take(&v, sizeof(v));
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

void Require(bool promise) {
  if (!promise) std::abort();
}

// A result the validator accepted keeps every promise the dispatcher relies on.
void CheckAccepted(const ChunkResult& r, const std::vector<HeldChunk>& held, size_t index) {
  Require(index < held.size());
  Require(held[index].chunk_id == r.chunk_id && held[index].slot == r.slot);
  Require(r.frames_done <= held[index].frames);
  Require(std::memchr(r.message, '\0', sizeof(r.message)) != nullptr);
  Require(r.error == 0 || r.error == 1);
}

void FuzzControlBlock(Bytes& in, const std::vector<HeldChunk>& held) {
  // The block as the supervisor maps it: raw bytes from the worker, read through the fields.
  auto storage =
      std::make_unique<std::aligned_storage_t<sizeof(ControlHeader), alignof(ControlHeader)>>();
  auto* block = reinterpret_cast<ControlHeader*>(storage.get());
  in.Take(block, sizeof(ControlHeader));
  WorkerChannel& ch = block->channel;

  Result<WorkerState> state = ValidateWorkerState(ch.state.load());
  if (state.ok()) Require(static_cast<uint32_t>(*state) <= kLastWorkerState);

  char device[kDeviceBytes];
  std::memcpy(device, ch.device, sizeof(device));
  Result<ProbeReport> probe =
      ValidateProbe(ch.probe_out_width.load(), ch.probe_out_height.load(), device, sizeof(device));
  if (probe.ok()) {
    Require(probe->width >= 1 && probe->width <= kMaxProbeOutput);
    Require(!probe->device.empty() && probe->device.size() < kDeviceBytes);
  }
  (void)PrintableText(ch.error, sizeof(ch.error));

  TelemetrySnapshot prev = in.Get<TelemetrySnapshot>();
  uint64_t now_ms = in.Get<uint64_t>();
  TelemetrySnapshot now = ReadTelemetry(ch.telemetry);
  if (ValidateTelemetry(now, prev, now_ms).ok()) {
    Require(now.heartbeat_ms >= prev.heartbeat_ms && now.frames_done >= prev.frames_done);
    Require(now.rss_bytes <= kMaxPlausibleBytes);
  }

  // The result ring from the supervisor's side: our own head starts at 0, every pop is checked,
  // and the loop ends (at most a ring's worth before the tail must be read again).
  CheckedConsumer<ChunkResult, kRingCapacity> results(&ch.results);  // resets head, not tail
  ChunkResult r;
  for (uint32_t i = 0; i <= kRingCapacity; ++i) {
    PopResult p = results.TryPop(&r);
    if (p != PopResult::kItem) break;
    Require(i < kRingCapacity);
    size_t index = 0;
    if (ValidateChunkResult(r, held, &index).ok()) CheckAccepted(r, held, index);
  }
  // The request ring from the supervisor's side, with the worker's head as it wrote it.
  CheckedProducer<ChunkRequest, kRingCapacity> requests(&ch.requests);  // resets tail, not head
  ChunkRequest rq{};
  for (uint32_t i = 0; i <= kRingCapacity; ++i) {
    if (requests.TryPush(rq) != PushResult::kPushed) break;
    Require(i < kRingCapacity);
    Require(ch.requests.tail.load() == i + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  // The supervisor's own records: up to 4 chunks in flight.
  std::vector<HeldChunk> held(in.Get<uint8_t>() % 5);
  for (HeldChunk& h : held) h = in.Get<HeldChunk>();

  // One result image, as copied out of the ring.
  std::vector<uint8_t> image(sizeof(ChunkResult));
  in.Take(image.data(), image.size());
  ChunkResult r;
  size_t index = 0;
  if (ValidateChunkResultBytes(image.data(), image.size(), held, &r, &index).ok()) {
    CheckAccepted(r, held, index);
  }

  // An arena geometry (as a worker would read from a request or a scribbled header) and the
  // size of its mapping: accepted means every slot, its FaceWarps included, lies inside.
  ArenaGeometry g = in.Get<ArenaGeometry>();
  uint64_t mapping = in.Get<uint64_t>();
  if (ValidateArenaGeometry(g, mapping).ok()) {
    const uint64_t last_slot = g.data_offset + uint64_t{g.slot_count - 1} * g.slot_bytes;
    const uint64_t frames = (g.InFrameBytes() + g.OutFrameBytes()) * g.chunk_frames;
    Require(last_slot + frames <= mapping);
    Require(g.FacesOffset() >= frames && last_slot + g.FacesOffset() + g.FacesBytes() <= mapping);
    Require(g.face_slots <= kMaxFacesPerFrame);
    Require(g.face_slots == 0 || (g.out_width == g.in_width && g.out_height == g.in_height));
  }

  // Ring indices alone.
  uint64_t mine = in.Get<uint64_t>(), other = in.Get<uint64_t>(), last = in.Get<uint64_t>();
  int64_t n = CheckRingIndices(RingSide::kConsumer, mine, other, last, kRingCapacity);
  Require(n <= static_cast<int64_t>(kRingCapacity));
  n = CheckRingIndices(RingSide::kProducer, mine, other, last, kRingCapacity);
  Require(n <= static_cast<int64_t>(kRingCapacity));

  FuzzControlBlock(in, held);
  return 0;
}
