#include "common/shm_validate.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/tile_setting.h"

namespace framemill {
namespace {

Status Bad(const std::string& what) { return Status(StatusCode::kWorkerFailed, what); }

bool Terminated(const char* text, size_t bytes) {
  return std::memchr(text, '\0', bytes) != nullptr;
}

bool Mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool Add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace

std::string PrintableText(const char* text, size_t bytes) {
  size_t n = strnlen(text, bytes);
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

Status ValidateChunkResult(const ChunkResult& r, const std::vector<HeldChunk>& held,
                           size_t* index) {
  size_t i = 0;
  while (i < held.size() && held[i].chunk_id != r.chunk_id) ++i;
  if (i == held.size()) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) +
               ", which the worker does not hold");
  }
  const HeldChunk& h = held[i];
  if (r.slot != h.slot) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " names slot " +
               std::to_string(r.slot) + ", not its slot " + std::to_string(h.slot));
  }
  if (!Terminated(r.message, sizeof(r.message))) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " has an unterminated message");
  }
  if (r.error != 0 && r.error != 1) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " has error code " +
               std::to_string(r.error));
  }
  if (r.error == 0 ? r.frames_done != h.frames : r.frames_done > h.frames) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " reports " +
               std::to_string(r.frames_done) + " frames done of " + std::to_string(h.frames) +
               (r.error == 0 ? " and no error" : ""));
  }
  if (r.busy_us > kMaxBusyUs) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " claims " +
               std::to_string(r.busy_us) + " us of work");
  }
  if (r.fallback_events > kMaxFallbackFigure || r.fallback_per_call > kMaxFallbackFigure ||
      (r.fallback_tile != 0 &&
       (r.fallback_tile < kMinTileSize || r.fallback_tile > kMaxTileSize))) {
    return Bad("result for chunk " + std::to_string(r.chunk_id) + " has impossible fallbacks (" +
               std::to_string(r.fallback_events) + " events, " +
               std::to_string(r.fallback_per_call) + " per call, tile " +
               std::to_string(r.fallback_tile) + ")");
  }
  *index = i;
  return Status::Ok();
}

Status ValidateChunkResultBytes(const uint8_t* bytes, size_t n, const std::vector<HeldChunk>& held,
                                ChunkResult* out, size_t* index) {
  if (n < sizeof(ChunkResult)) return Bad("short result");
  std::memcpy(out, bytes, sizeof(ChunkResult));
  return ValidateChunkResult(*out, held, index);
}

Result<WorkerState> ValidateWorkerState(uint32_t raw) {
  if (raw > kLastWorkerState) return Bad("worker state " + std::to_string(raw) + " is no state");
  return static_cast<WorkerState>(raw);
}

Result<ProbeReport> ValidateProbe(uint32_t width, uint32_t height, const char* device,
                                  size_t device_bytes, uint32_t in_width, uint32_t in_height) {
  const uint64_t max_w = uint64_t{in_width} * kMaxModelScale;
  const uint64_t max_h = uint64_t{in_height} * kMaxModelScale;
  if (width == 0 || height == 0 || width > max_w || height > max_h) {
    return Bad("probe output " + std::to_string(width) + "x" + std::to_string(height) +
               " is outside 1.." + std::to_string(max_w) + " x 1.." + std::to_string(max_h) +
               " for a " + std::to_string(in_width) + "x" + std::to_string(in_height) +
               " input");
  }
  if (!Terminated(device, device_bytes)) return Bad("device name is not terminated");
  size_t n = strnlen(device, device_bytes);
  if (n == 0) return Bad("device name is empty");
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(device[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return Bad("device name \"" + PrintableText(device, device_bytes) +
                 "\" has a byte that is not printable");
    }
  }
  ProbeReport p;
  p.width = width;
  p.height = height;
  p.device.assign(device, n);
  return p;
}

TelemetrySnapshot ReadTelemetry(const WorkerTelemetry& t) {
  TelemetrySnapshot s;
  s.heartbeat_ms = t.heartbeat_ms.load(std::memory_order_acquire);
  s.frames_done = t.frames_done.load(std::memory_order_relaxed);
  s.chunks_done = t.chunks_done.load(std::memory_order_relaxed);
  s.rss_bytes = t.rss_bytes.load(std::memory_order_relaxed);
  s.gpu_allocated_bytes = t.gpu_allocated_bytes.load(std::memory_order_relaxed);
  s.gpu_reserved_bytes = t.gpu_reserved_bytes.load(std::memory_order_relaxed);
  s.gpu_peak_allocated_bytes = t.gpu_peak_allocated_bytes.load(std::memory_order_relaxed);
  s.gpu_peak_reserved_bytes = t.gpu_peak_reserved_bytes.load(std::memory_order_relaxed);
  s.gpu_process_bytes = t.gpu_process_bytes.load(std::memory_order_relaxed);
  return s;
}

Status ValidateTelemetry(const TelemetrySnapshot& now, const TelemetrySnapshot& prev,
                         uint64_t now_ms) {
  if (now.heartbeat_ms > now_ms + kHeartbeatSlackMs) {
    return Bad("heartbeat " + std::to_string(now.heartbeat_ms) + " ms is ahead of the clock (" +
               std::to_string(now_ms) + " ms)");
  }
  if (now.heartbeat_ms < prev.heartbeat_ms) return Bad("heartbeat moved backwards");
  if (now.frames_done < prev.frames_done) return Bad("frames_done moved backwards");
  if (now.chunks_done < prev.chunks_done) return Bad("chunks_done moved backwards");
  const std::pair<const char*, uint64_t> figures[] = {
      {"rss_bytes", now.rss_bytes},
      {"gpu_allocated_bytes", now.gpu_allocated_bytes},
      {"gpu_reserved_bytes", now.gpu_reserved_bytes},
      {"gpu_peak_allocated_bytes", now.gpu_peak_allocated_bytes},
      {"gpu_peak_reserved_bytes", now.gpu_peak_reserved_bytes},
      {"gpu_process_bytes", now.gpu_process_bytes}};
  for (const auto& [name, value] : figures) {
    if (value > kMaxPlausibleBytes) {
      return Bad(std::string(name) + " " + std::to_string(value) + " is beyond any memory");
    }
  }
  return Status::Ok();
}

Status ValidateControlHeader(const void* data, size_t bytes) {
  auto bad = [](const std::string& what) { return Bad("control block: " + what); };
  if (data == nullptr || bytes < sizeof(ControlHeader)) {
    return bad(std::to_string(bytes) + " bytes, fewer than its header's " +
               std::to_string(sizeof(ControlHeader)));
  }
  // Read in place: the worker trusts what the supervisor wrote; this only tells another build's
  // layout from ours.
  const auto& h = *static_cast<const ControlHeader*>(data);
  if (h.magic != kControlMagic) return bad("magic is not framemill's");
  if (h.version != kProtocolVersion) {
    return bad("protocol version " + std::to_string(h.version) + ", not " +
               std::to_string(kProtocolVersion));
  }
  if (h.header_bytes != sizeof(ControlHeader)) {
    return bad("header of " + std::to_string(h.header_bytes) + " bytes, not " +
               std::to_string(sizeof(ControlHeader)));
  }
  return Status::Ok();
}

Status ValidateArenaGeometry(const ArenaGeometry& g, uint64_t mapping_bytes) {
  auto bad = [](const std::string& what) { return Bad("arena geometry: " + what); };
  if (g.slot_count == 0 || g.chunk_frames == 0) return bad("no slots or no frames per slot");
  if (g.in_width == 0 || g.in_height == 0 || g.out_width == 0 || g.out_height == 0 ||
      g.in_width > kMaxFrameSide || g.in_height > kMaxFrameSide || g.out_width > kMaxFrameSide ||
      g.out_height > kMaxFrameSide) {
    return bad("frame size out of range");
  }
  if (static_cast<uint32_t>(g.in_format) > kLastFrameFormat) return bad("unknown input format");
  if (g.out_format == FrameFormat::kYuv420p &&
      (g.in_format != FrameFormat::kYuv420p || g.face_slots != 0 || g.out_width % 2 != 0 ||
       g.out_height % 2 != 0)) {
    return bad("yuv420p output without yuv420p input, with faces or of an odd size");
  }
  if (static_cast<uint32_t>(g.out_format) > kLastFrameFormat) {
    return bad("unknown output format");
  }
  if (static_cast<uint32_t>(g.in_matrix) > static_cast<uint32_t>(YuvMatrix::kFcc)) {
    return bad("unknown YUV matrix");
  }
  if (g.in_full_range > 1) return bad("range flag is neither 0 nor 1");
  if (g.face_slots > kMaxFacesPerFrame) {
    return bad("face_slots " + std::to_string(g.face_slots) + " is above " +
               std::to_string(kMaxFacesPerFrame));
  }
  if (g.face_slots == 0 && (g.face_size != 0 || g.face_blend != 0)) {
    return bad("face size or blend without face slots");
  }
  if (g.face_slots > 0) {
    if (g.face_size < kMinFaceSize || g.face_size > kMaxFaceSize) {
      return bad("face_size " + std::to_string(g.face_size) + " is outside " +
                 std::to_string(kMinFaceSize) + ".." + std::to_string(kMaxFaceSize));
    }
    if (g.face_blend > g.face_size / 2) {
      return bad("face_blend " + std::to_string(g.face_blend) + " is above half the face size");
    }
    if (g.out_width != g.in_width || g.out_height != g.in_height) {
      return bad("face mode with an output frame of another size than the input");
    }
  }
  if ((g.flags & ~kArenaPageLock) != 0) return bad("unknown flags");
  if (g.data_offset < sizeof(ArenaHeader)) return bad("slots overlap the header");
  // Frame sides are at most 2^18, so a frame is below 2^39 bytes: no overflow until the products.
  // The FaceWarps come after the frames (FacesOffset), at most 2^32 * 16 * 32 bytes of them.
  const uint64_t frame = g.InFrameBytes() + g.OutFrameBytes();
  uint64_t frames = 0, rounded = 0, per_slot = 0, slots = 0, end = 0;
  if (!Mul(frame, g.chunk_frames, &frames) || !Add(frames, kFaceWarpAlignment - 1, &rounded) ||
      !Add(rounded / kFaceWarpAlignment * kFaceWarpAlignment, g.FacesBytes(), &per_slot) ||
      per_slot > g.slot_bytes) {
    return bad("a slot is smaller than its frames");
  }
  if (!Mul(g.slot_bytes, g.slot_count, &slots) || !Add(slots, g.data_offset, &end) ||
      end > g.total_bytes || g.total_bytes > mapping_bytes) {
    return bad("slots end beyond the object");
  }
  return Status::Ok();
}

}  // namespace framemill
