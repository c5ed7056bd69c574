// The shared-memory protocol between the supervisor and its workers: the layout of the objects
// they share, and their lifecycle beside it (how big a job's arena is, how each object is created
// and initialised, how a wake-up is sent and waited for). The checks of everything a worker can
// write are in shm_validate.h (kept apart so that a fuzz target builds them alone). A protocol
// change touches this pair, shm_validate and their tests (tests/unit/shm_*_test.cpp).
//
// Two kinds of object, both files in the supervisor's private directory under /dev/shm (see
// shared_memory.h):
//
//  - a control block ("ctl-..."), one per worker process (a fresh one for each spawn), in that
//    worker's own scope (a subdirectory that no other worker can reach): a header and that
//    worker's WorkerChannel: one SPSC ring per direction, the worker's state, probe result and
//    telemetry. No other worker maps it. It holds no lock and no kernel object:
//    wake-ups travel over a socket pair (PostWakeUp, WaitForWakeUp below; worker_pool.h), so
//    nothing in it can block the supervisor.
//  - a frame arena ("arena-...") per job, mapped by every worker of the job (each through a name
//    of it in its own scope, given as the request's arena_name): a header and
//    `slot_count` slots. A slot holds one chunk: its input frames (rgb24, rgb48 or planar YUV
//    4:2:0, see frame_format.h), then room for its output frames (rgb24 or rgb48), packed rows,
//    and in face mode (face_slots > 0) the FaceWarps of its frames (common/face_warp.h), written
//    by the supervisor with the input frames and only read by the worker.
//    The supervisor alone decides which slot belongs to which chunk; a worker touches only the
//    slot of a request it holds.
//
// Trust runs one way. A worker trusts what the supervisor writes. The supervisor trusts nothing a
// worker can write: it keeps its own copy of every size, offset and index (the arena geometry,
// its ring indices, which chunk sits in which slot), never reads the arena header back, and
// passes every value it does read (ring indices, results, state, probe, device, telemetry)
// through the validators of shm_validate.h before use. The geometry travels in each request, so
// a worker that scribbles over the arena header misleads nobody.
//
// Any change to these structs must bump kProtocolVersion: a worker from another build then
// refuses to attach with a clear message instead of misreading memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <cstring>
#include <poll.h>
#include <string>

#include "common/face_warp.h"
#include "common/frame_format.h"
#include "common/shared_memory.h"
#include "common/spsc_ring.h"
#include "common/status.h"

namespace framemill {

inline constexpr uint32_t kProtocolVersion = 11;
inline constexpr uint64_t kControlMagic = 0x4c54434d4d52464dull;  // "MFRMMCTL"
inline constexpr uint64_t kArenaMagic = 0x4e5241414d52464dull;    // "MFRMAARN"
inline constexpr uint32_t kMaxWorkerChannels = 64;                // per supervisor
inline constexpr uint32_t kRingCapacity = 8;
inline constexpr size_t kNameBytes = 160;  // a full path under /dev/shm, terminated
inline constexpr size_t kMessageBytes = 480;
inline constexpr size_t kDeviceBytes = 32;
inline constexpr size_t kSandboxBytes = 160;
inline constexpr size_t kSlotAlignment = 4096;
// Where a slot's FaceWarps start, after its frames: rounded up to this (a FaceWarp's fields need
// their natural alignment; an odd frame size leaves the frames' end anywhere).
inline constexpr size_t kFaceWarpAlignment = 64;

// Chunks the supervisor sends a worker before its answers: one running, one waiting, so a worker
// never idles between chunks. The dispatcher keeps to it (supervisor/workers/dispatcher.cpp) and
// the arena has room for it (SizeArena). Fewer than the rings hold, so a worker's result never
// waits for room while the supervisor is healthy.
inline constexpr int kInflightPerWorker = 2;
static_assert(kInflightPerWorker < static_cast<int>(kRingCapacity),
              "a worker's requests and results in flight must fit its rings");
// Arena slots beyond those in the workers' hands: chunks decoded ahead of the workers and
// finished ones waiting for the encoder.
inline constexpr uint64_t kArenaSpareSlots = 4;

inline uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Where the frames of a job's arena lie. Written by the supervisor, which keeps its own copy and
// sends it in every request; the copy in the arena header is for people reading a dump.
struct ArenaGeometry {
  uint32_t slot_count = 0;
  uint32_t chunk_frames = 0;  // frames a slot can hold
  uint32_t in_width = 0, in_height = 0, out_width = 0, out_height = 0;
  FrameFormat in_format = FrameFormat::kRgb24;  // how the input frames lie in a slot
  YuvMatrix in_matrix = YuvMatrix::kBt601;      // kYuv420p: the matrix to RGB
  uint32_t in_full_range = 0;  // kYuv420p: 1 = full range (0-255), 0 = limited (16-235)
  FrameFormat out_format = FrameFormat::kRgb24;  // kRgb24, kRgb48 or kYuv420p (shm_validate.h)
  uint64_t slot_bytes = 0;                       // distance between slots
  uint64_t data_offset = 0;                      // from the start of the object to slot 0
  uint64_t total_bytes = 0;                      // size of the whole object
  // Face mode (common/face_warp.h): FaceWarps per frame, at most kMaxFacesPerFrame; 0 = the model
  // sees whole frames (face_size and face_blend 0 then). With faces the output frame is the input's
  // size (the faces are pasted back into it); face_size is the face model's square input side
  // (kMinFaceSize..kMaxFaceSize) and face_blend the paste's feather width in crop pixels (at most
  // face_size / 2).
  uint32_t face_slots = 0;
  uint32_t face_size = 0;
  uint32_t face_blend = 0;
  // kArenaPageLock: CUDA workers page-lock the arena (common/config.h PageLockArena). Other bits
  // are zero.
  uint32_t flags = 0;

  size_t InFrameBytes() const { return FrameBytes(in_format, in_width, in_height); }
  size_t OutFrameBytes() const { return FrameBytes(out_format, out_width, out_height); }
  // Slot addresses in a mapping at `base`; only for a geometry that passed
  // ValidateArenaGeometry against that mapping's size.
  uint8_t* SlotIn(uint8_t* base, uint32_t slot) const {
    return base + data_offset + uint64_t{slot} * slot_bytes;
  }
  uint8_t* SlotOut(uint8_t* base, uint32_t slot) const {
    return SlotIn(base, slot) + InFrameBytes() * chunk_frames;
  }
  // Offset of a slot's FaceWarps from its start, and their bytes (0 in whole-frame mode).
  uint64_t FacesOffset() const {
    return AlignUp((uint64_t{InFrameBytes()} + OutFrameBytes()) * chunk_frames, kFaceWarpAlignment);
  }
  uint64_t FacesBytes() const { return uint64_t{chunk_frames} * face_slots * sizeof(FaceWarp); }
  // The slot's chunk_frames * face_slots FaceWarps: frame f's at [f * face_slots, (f + 1) *
  // face_slots), the present ones first.
  FaceWarp* SlotFaces(uint8_t* base, uint32_t slot) const {
    return reinterpret_cast<FaceWarp*>(SlotIn(base, slot) + FacesOffset());
  }
};

struct ArenaHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  ArenaGeometry geometry;
};

// Supervisor -> worker. kind kChunk: run the model over `frames` frames of `slot`.
// kind kStop: finish and exit 0. kind kWarmup: map `arena_name` and run the model once on a
// random batch of `batch` frames of the arena's size (in face mode: of `batch` face crops), so
// that the first real chunk does not pay for kernel selection and first-use allocation (sent to a
// warm standby); no result is posted.
struct ChunkRequest {
  enum Kind : uint32_t { kChunk = 1, kStop = 2, kWarmup = 3 };
  uint32_t kind;
  uint32_t slot;
  uint64_t chunk_id;            // index of the chunk in the job's plan
  uint64_t first_frame;         // index of the chunk's first frame in the source
  uint32_t frames;              // frames in this chunk (<= arena chunk_frames)
  uint32_t batch;               // frames per model call; in face mode, crops per model call
  ArenaGeometry arena;          // kChunk, kWarmup: the arena's layout
  char arena_name[kNameBytes];  // full path of the arena object
};

// Worker -> supervisor, one per request of kind kChunk.
struct ChunkResult {
  uint64_t chunk_id;
  uint32_t slot;
  uint32_t frames_done;  // == request.frames when ok
  int32_t error;         // 0 = ok; 1 = the chunk failed and `message` says why
  // The model's out-of-memory fallbacks (worker/model/tiled_model.h): errors met since the worker's
  // last result (warm-up included), and what is in effect now: items per model call once halved
  // (0 = never), tile side in input pixels taken because of them (0 = none).
  uint32_t fallback_events;
  uint64_t busy_us;  // the worker's time on this chunk, request taken to result ready
  uint32_t fallback_per_call;
  uint32_t fallback_tile;
  char message[kMessageBytes];
};

enum class WorkerState : uint32_t {
  kEmpty = 0,     // no worker in this channel
  kStarting = 1,  // spawned, loading its model
  kReady = 2,     // model loaded, scale known, taking requests
  kFailed = 3,    // gave up; `error` says why; the process exits
  kExited = 4,    // left cleanly after kStop
};
inline constexpr uint32_t kLastWorkerState = 4;

// Figures a worker publishes after every batch; read by the supervisor without locking (each
// field is a separate atomic, so a torn *set* of figures is possible but never a torn figure).
struct WorkerTelemetry {
  std::atomic<uint64_t> heartbeat_ms{0};  // CLOCK_MONOTONIC ms at the last sign of life
  std::atomic<uint64_t> frames_done{0};
  std::atomic<uint64_t> chunks_done{0};
  std::atomic<uint64_t> rss_bytes{0};  // current private resident memory (RssAnon + RssFile)
  std::atomic<uint64_t> gpu_allocated_bytes{0};  // CUDA caching allocator, current
  std::atomic<uint64_t> gpu_reserved_bytes{0};
  std::atomic<uint64_t> gpu_peak_allocated_bytes{0};
  std::atomic<uint64_t> gpu_peak_reserved_bytes{0};
  std::atomic<uint64_t> gpu_process_bytes{
      0};  // NVML: all of this process's GPU memory; 0 = unknown
};

struct WorkerChannel {
  std::atomic<uint32_t> state{0};  // a WorkerState, as written by the worker
  std::atomic<int32_t> pid{0};     // for people reading a dump; the supervisor never reads it
  // Output size of the model for a kProbeSize x kProbeSize input; fixed once kReady.
  std::atomic<uint32_t> probe_out_width{0};
  std::atomic<uint32_t> probe_out_height{0};
  char device[kDeviceBytes];  // device the worker chose ("cpu", "cuda:0"); set before kReady
  char error[kMessageBytes];  // why the worker failed; set before kFailed
  // The sandbox the worker got (worker/sandbox/sandbox.h SandboxReport::Summary), set before it
  // reads the model; worker-written text: the supervisor copies and cleans it before use.
  char sandbox[kSandboxBytes];
  SpscRing<ChunkRequest, kRingCapacity> requests;
  SpscRing<ChunkResult, kRingCapacity> results;
  WorkerTelemetry telemetry;
};

// One worker's control block.
struct ControlHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;  // sizeof(ControlHeader): a second guard against layout drift
  int32_t supervisor_pid;
  uint32_t channel_index;  // the pool's channel number, for log lines
  WorkerChannel channel;
};

// Size of the square frame a worker runs once at load to find the model's scale.
inline constexpr uint32_t kProbeSize = 64;

// Copies a C string into a fixed buffer, always terminated.
template <size_t N>
inline void CopyString(char (&dst)[N], const std::string& src) {
  size_t n = src.size() < N - 1 ? src.size() : N - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// ---- Lifecycle ----

// What a job asks of its arena besides the frames' shape.
struct ArenaDemand {
  int workers = 1;                 // worker processes of the job
  int encoders = 1;                // segments encoded at once
  int64_t chunks_per_segment = 1;  // chunks of a segment
  int64_t chunks = 0;              // chunks in the job's plan
  int64_t arena_mb = 4096;         // the cap: the arena's slots in MiB (config arena_mb)
};

// The arena for a job: `shape` gives the frames (chunk_frames, the input and output sizes and
// formats, the input's matrix and range, the face fields; its other fields are ignored), and
// SizeArena fills in the slots: each holds one chunk's input and output frames and, in face mode,
// its FaceWarps (from FacesOffset()), rounded up to kSlotAlignment; there
// are as many as the workers hold in flight (workers * kInflightPerWorker) plus kArenaSpareSlots,
// plus encoders * chunks_per_segment when encoders > 1 (each encoder's segment waits whole in the
// arena), but no more than the plan's chunks + 1 and than fit in arena_mb MiB. The header lies in
// the first kSlotAlignment-aligned bytes, outside the arena_mb budget.
// Errors: kInvalidJob when arena_mb holds fewer than 2 slots (the message says what to change);
// kInternal for a shape with no frames in a slot.
Result<ArenaGeometry> SizeArena(const ArenaGeometry& shape, const ArenaDemand& demand);

// ArenaGeometry::flags.
inline constexpr uint32_t kArenaPageLock = 1;

// Whether page-locking a job's arena in a CUDA worker pays for itself, for a job of `frames`
// frames (page_lock_arena "auto"): when the frames' bytes, in and out, come to 20 times the
// arena's. Measured on an H200 machine with `restore` at 1080p (BENCHMARKS.md, "Staged copies
// against a page-locked arena"): page-locking cost 0.39 ms a MB of arena, once per worker; staged
// copies about 0.013 ms a MB moved (the host's copy of a chunk's last batch, which the next chunk
// waits for) and 0.2-0.3 s while the worker first touches the arena's pages. They break even near
// 25 times; 20 leans to page-locking, whose cost is paid once. There a job of more than about
// 9,000 frames (6 minutes at 25 fps) page-locks the default 4 GB arena.
bool WorthPageLocking(const ArenaGeometry& g, uint64_t frames);

// Whether two geometries describe the same arena, field by field.
bool SameArenaGeometry(const ArenaGeometry& a, const ArenaGeometry& b);

// Whether an arena made as `have` serves a job that wants `want`: the same frames in the same
// slot layout, and at least as many slots (SizeArena gives a shorter job fewer). The flags are
// the job's, not the arena's: they do not count.
bool ArenaHolds(const ArenaGeometry& have, const ArenaGeometry& want);

// The slots SizeArena would give the job if arena_mb were no cap: the workers' in-flight chunks,
// the spares and the encoders' segments, at most the plan's chunks + 1. A sized arena with fewer
// slots than this makes the decoder wait for the encoders (each slot is freed only once its
// segment is written), so its pipeline runs nearer one stage at a time.
uint64_t ArenaSlotsWanted(const ArenaDemand& demand);

// Creates a job's frame arena: a fresh shared-memory object ("arena-...") of g.total_bytes, its
// header written (magic, version, the geometry for people reading a dump), the slots zero.
// kInternal when `g` fails ValidateArenaGeometry against its own total_bytes; kIo (kNoSpace for a
// full /dev/shm) when the object cannot be made (shared_memory.h). `all_slots` false: only the
// header and slot 0 get their pages now, and each other slot must be reserved
// (SharedMemory::Reserve of ArenaSlotRange) before anything touches it; a 4 GB arena is then
// made in milliseconds instead of most of a second.
Result<SharedMemory> CreateFrameArena(const ArenaGeometry& g, bool all_slots = true);
// Slot `slot`'s bytes in the arena object: {offset, length}.
std::pair<uint64_t, uint64_t> ArenaSlotRange(const ArenaGeometry& g, uint32_t slot);

// Creates the control block of the worker about to start on channel `channel_index`: a fresh
// shared-memory object ("ctl-...") with its header written, the rings empty and the worker's
// state kStarting, in `scope` (that worker's own, whose directory its sandbox binds; null: the
// process's directory). The worker attaches to it by path and checks it (ValidateControlHeader).
Result<SharedMemory> CreateControlBlock(uint32_t channel_index, int32_t supervisor_pid,
                                        const SharedMemoryScope* scope = nullptr);

// Waits until one of `fds[0..count)` has an event (its revents set: readable, hung up, error) or
// `timeout_ms` (< 0: no limit) has passed on CLOCK_MONOTONIC. A signal does not cut the wait
// short: poll resumes with the time left, so a caller that must react to a signal does so at the
// latest when its timeout ends. Returns how many fds have events, 0 when the time ran out; kIo
// for a poll error other than EINTR.
Result<int> WaitForWakeUp(pollfd* fds, size_t count, int timeout_ms);

// Posts one wake-up byte on a socket end of the pair. Never blocks and never raises SIGPIPE: a
// full buffer means a wake-up is pending already, and a peer that is gone is seen elsewhere.
void PostWakeUp(int fd);

// Reads and drops the wake-up bytes pending on a non-blocking socket end: many wake-ups are
// served by one look at the rings. Bounded (a peer may write without end); what is left wakes the
// next wait at once. Returns false when the peer has closed its end.
bool DrainWakeUps(int fd);

}  // namespace framemill
