// The protocol's checks (shm_protocol.h): the control block a worker attaches to, and every value
// the supervisor reads from memory a worker can write.
// Each is a pure function of the bytes read (copied out of shared memory first, so the worker
// cannot change a value between its check and its use) and of the supervisor's own records; none
// touches shared memory, so a fuzz target can feed them arbitrary images
// (tests/fuzz/shm_validate_fuzz.cpp).
//
// A failed check returns kWorkerFailed with a message that says what was wrong; the supervisor
// logs it as "protocol violation: <message>", kills the worker and retries its chunks elsewhere.
// Thread safety: all functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/shm_protocol.h"
#include "common/status.h"

namespace framemill {

// Largest scale a model may have (a 16x upscaler): its output for the probe's input may be at
// most this many times the input's side.
inline constexpr uint32_t kMaxModelScale = 16;
// Largest side a model's output may have for a kProbeSize square input.
inline constexpr uint32_t kMaxProbeOutput = kProbeSize * kMaxModelScale;
// Largest frame side an arena may describe (far above any video; keeps the sums from overflowing).
inline constexpr uint32_t kMaxFrameSide = 1u << 18;
// Largest memory figure a worker may report (1 PiB): anything above is a lie, not a leak.
inline constexpr uint64_t kMaxPlausibleBytes = 1ull << 50;
// Largest time a worker may claim for one chunk (7 days).
inline constexpr uint64_t kMaxBusyUs = 7ull * 24 * 3600 * 1000 * 1000;
// Largest out-of-memory fallback figures a result may carry (errors per result, items per call):
// a worker halves at most a few dozen times in its life.
inline constexpr uint32_t kMaxFallbackFigure = 1u << 20;
// How far a heartbeat may lie ahead of the supervisor's clock (the worker may write it just
// after the supervisor read the clock).
inline constexpr uint64_t kHeartbeatSlackMs = 1000;

// A chunk the supervisor has sent to a worker and not yet had back: its own record.
struct HeldChunk {
  uint64_t chunk_id = 0;
  uint32_t slot = 0;
  uint32_t frames = 0;
};

// A result is valid when it answers a chunk in `held`, names that chunk's slot, has error 0
// (frames_done == frames) or 1 (frames_done <= frames, and a message), a message terminated
// within its buffer, a plausible busy time, and fallback figures (events and items per call at
// most kMaxFallbackFigure, tile 0 or in kMinTileSize..kMaxTileSize). On success, *index is the
// position in `held`.
Status ValidateChunkResult(const ChunkResult& r, const std::vector<HeldChunk>& held, size_t* index);

// The same on a raw image of `n` bytes (fewer than sizeof(ChunkResult) is invalid); *out gets
// the copy that was checked.
Status ValidateChunkResultBytes(const uint8_t* bytes, size_t n, const std::vector<HeldChunk>& held,
                                ChunkResult* out, size_t* index);

// A WorkerState as written by a worker: one of the enum's values.
Result<WorkerState> ValidateWorkerState(uint32_t raw);

// What a ready worker reports about its model.
struct ProbeReport {
  uint32_t width = 0, height = 0;  // output for the probe's input
  std::string device;              // "cpu", "cuda:0"
};
// Sizes in [1, kMaxModelScale x the probe's input side] (`in_width` x `in_height`: the input the
// worker was told to probe with); device NUL-terminated within `device_bytes`, not empty,
// printable ASCII without spaces.
Result<ProbeReport> ValidateProbe(uint32_t width, uint32_t height, const char* device,
                                  size_t device_bytes, uint32_t in_width = kProbeSize,
                                  uint32_t in_height = kProbeSize);

// One read of a worker's telemetry, each field loaded once.
struct TelemetrySnapshot {
  uint64_t heartbeat_ms = 0;
  uint64_t frames_done = 0;
  uint64_t chunks_done = 0;
  uint64_t rss_bytes = 0;
  uint64_t gpu_allocated_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t gpu_peak_allocated_bytes = 0;
  uint64_t gpu_peak_reserved_bytes = 0;
  uint64_t gpu_process_bytes = 0;
};
TelemetrySnapshot ReadTelemetry(const WorkerTelemetry& t);

// `now` against the previous valid snapshot of the same worker (zeros at first) and the
// supervisor's CLOCK_MONOTONIC `now_ms`: heartbeat not ahead of now_ms + kHeartbeatSlackMs,
// heartbeat and counters never moving backwards, memory figures <= kMaxPlausibleBytes.
Status ValidateTelemetry(const TelemetrySnapshot& now, const TelemetrySnapshot& prev,
                         uint64_t now_ms);

// A control block a worker is about to attach to (`bytes` of mapping at `data`): large enough for a
// ControlHeader, with this build's magic, kProtocolVersion and sizeof(ControlHeader). The error
// says which field differs; a worker that gets one refuses to attach (another build's layout).
Status ValidateControlHeader(const void* data, size_t bytes);

// An arena geometry fits a mapping of `mapping_bytes`: every slot's input and output frames and
// its FaceWarps lie inside it (no overflow anywhere), enums in range, sizes non-zero and bounded;
// face fields zero, or face_slots <= kMaxFacesPerFrame, face_size in kMinFaceSize..kMaxFaceSize,
// face_blend <= face_size / 2 and the output frame the input's size; a yuv420p output only after
// a yuv420p input, of whole frames (no face slots) of even width and height.
Status ValidateArenaGeometry(const ArenaGeometry& g, uint64_t mapping_bytes);

// The text in a fixed buffer up to its NUL (or all `bytes` of it), with every byte that is not
// printable ASCII written as \xNN: safe for logs and JSON.
std::string PrintableText(const char* text, size_t bytes);

}  // namespace framemill
