// The shared-memory layout between the supervisor and its workers. Two kinds of object:
//
//  - the control block ("...ctl"), one per supervisor: a header, the supervisor's wake-up
//    semaphore and one WorkerChannel per worker slot. A channel has one SPSC ring per direction
//    and the worker's telemetry. The supervisor writes requests and reads results/telemetry; the
//    worker the reverse. No lock that a worker could hold: semaphores (which have no owner) are
//    used only to wake the other side.
//  - a frame arena ("...arena") per job: a header and `slot_count` slots. A slot holds one
//    chunk: its input frames (rgb24 or planar YUV 4:2:0, see frame_format.h), then room for its
//    output frames, rgb24, packed rows.
//    The supervisor alone decides which slot belongs to which chunk; a worker touches only the
//    slot of a request it holds.
//
// Any change to these structs must bump kProtocolVersion: a worker from another build then
// refuses to attach with a clear message instead of misreading memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <boost/interprocess/sync/interprocess_semaphore.hpp>

#include "common/frame_format.h"
#include "common/spsc_ring.h"

namespace framemill {

inline constexpr uint32_t kProtocolVersion = 5;
inline constexpr uint64_t kControlMagic = 0x4c54434d4d52464dull;  // "MFRMMCTL"
inline constexpr uint64_t kArenaMagic = 0x4e5241414d52464dull;    // "MFRMAARN"
inline constexpr uint32_t kMaxWorkerChannels = 64;
inline constexpr uint32_t kRingCapacity = 8;
inline constexpr size_t kNameBytes = 96;
inline constexpr size_t kMessageBytes = 480;
inline constexpr size_t kSandboxBytes = 160;
inline constexpr size_t kSlotAlignment = 4096;

// Supervisor -> worker. kind kChunk: run the model over `frames` frames of `slot`.
// kind kStop: finish and exit 0. kind kWarmup: map `arena_name` and run the model once on a
// random batch of `batch` frames of the arena's size, so that the first real chunk does not pay
// for kernel selection and first-use allocation (sent to a warm standby); no result is posted.
struct ChunkRequest {
  enum Kind : uint32_t { kChunk = 1, kStop = 2, kWarmup = 3 };
  uint32_t kind;
  uint32_t slot;
  uint64_t chunk_id;            // index of the chunk in the job's plan
  uint64_t first_frame;         // index of the chunk's first frame in the source
  uint32_t frames;              // frames in this chunk (<= arena chunk_frames)
  uint32_t batch;               // frames per model call
  char arena_name[kNameBytes];  // shared-memory object holding the slot
};

// Worker -> supervisor, one per request of kind kChunk.
struct ChunkResult {
  uint64_t chunk_id;
  uint32_t slot;
  uint32_t frames_done;  // == request.frames when ok
  int32_t error;         // 0 = ok; else the chunk failed and `message` says why
  uint64_t busy_us;      // the worker's time on this chunk, request taken to result ready
  char message[kMessageBytes];
};

enum class WorkerState : uint32_t {
  kEmpty = 0,     // no worker in this channel
  kStarting = 1,  // spawned, loading its model
  kReady = 2,     // model loaded, scale known, taking requests
  kFailed = 3,    // gave up; `error` says why; the process exits
  kExited = 4,    // left cleanly after kStop
};

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
  std::atomic<WorkerState> state{WorkerState::kEmpty};
  std::atomic<int32_t> pid{0};
  // Output size of the model for a kProbeSize x kProbeSize input; fixed once kReady.
  std::atomic<uint32_t> probe_out_width{0};
  std::atomic<uint32_t> probe_out_height{0};
  char device[32];            // device the worker chose ("cpu", "cuda:0"); set before kReady
  char error[kMessageBytes];  // why the worker failed; set before kFailed
  // The sandbox the worker got (worker/sandbox.h SandboxReport::Summary), set before it reads
  // the model; worker-written text: the supervisor copies and cleans it before use.
  char sandbox[kSandboxBytes];
  boost::interprocess::interprocess_semaphore request_posted{0};  // worker waits on it
  SpscRing<ChunkRequest, kRingCapacity> requests;
  SpscRing<ChunkResult, kRingCapacity> results;
  WorkerTelemetry telemetry;
};

struct ControlHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;   // sizeof(ControlHeader): a second guard against layout drift
  uint32_t channel_bytes;  // sizeof(WorkerChannel)
  uint32_t channel_count;
  int32_t supervisor_pid;
  // Posted by workers (and the supervisor's own threads) when there is something to look at.
  boost::interprocess::interprocess_semaphore wake{0};
  WorkerChannel channels[kMaxWorkerChannels];
};

struct ArenaHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  uint32_t slot_count;
  uint32_t chunk_frames;  // frames a slot can hold
  uint32_t in_width, in_height, out_width, out_height;
  FrameFormat in_format;   // how the input frames lie in a slot
  YuvMatrix in_matrix;     // kYuv420p: the matrix to RGB
  uint32_t in_full_range;  // kYuv420p: 1 = full range (0-255), 0 = limited (16-235)
  uint32_t reserved;
  uint64_t slot_bytes;   // distance between slots
  uint64_t data_offset;  // from the start of the object to slot 0

  size_t InFrameBytes() const { return FrameBytes(in_format, in_width, in_height); }
  size_t OutFrameBytes() const { return size_t{out_width} * out_height * 3; }
  uint8_t* SlotIn(uint32_t slot) {
    return reinterpret_cast<uint8_t*>(this) + data_offset + slot * slot_bytes;
  }
  uint8_t* SlotOut(uint32_t slot) { return SlotIn(slot) + InFrameBytes() * chunk_frames; }
};

// Size of the square frame a worker runs once at load to find the model's scale.
inline constexpr uint32_t kProbeSize = 64;

inline uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Copies a C string into a fixed buffer, always terminated.
template <size_t N>
inline void CopyString(char (&dst)[N], const std::string& src) {
  size_t n = src.size() < N - 1 ? src.size() : N - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace framemill
