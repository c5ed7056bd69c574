#include "supervisor/job/job_arena.h"

#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/job/color_choice.h"

namespace framemill {

ArenaDemand ArenaPlanner::Demand() const {
  ArenaDemand demand;
  demand.workers = settings_.workers;
  demand.encoders = settings_.encoders;
  demand.chunks_per_segment = p_.plan.chunks_per_segment;
  demand.chunks = static_cast<int64_t>(p_.plan.chunks.size());
  demand.arena_mb = config_.arena_mb;
  return demand;
}

FrameFormat ArenaPlanner::InputFormat(ColorConversion conversion) const {
  return conversion == ColorConversion::kDevice  ? FrameFormat::kYuv420p
         : p_.media.video.bits_per_component > 8 ? FrameFormat::kRgb48
                                                 : FrameFormat::kRgb24;
}

FrameFormat ArenaPlanner::OutputFormat(FrameFormat in_format, int out_w, int out_h) const {
  const bool yuv_back = in_format == FrameFormat::kYuv420p && settings_.mode != JobMode::kFaces &&
                        out_w % 2 == 0 && out_h % 2 == 0 && !p_.color_path.full_range &&
                        p_.encoder.pix_fmt == "yuv420p";
  return yuv_back ? FrameFormat::kYuv420p : p_.out_format;
}

ColorConversion ArenaPlanner::Conversion(const std::string& worker_device, int out_w, int out_h,
                                         std::string* warning) const {
  const bool yuv_round_trip =
      OutputFormat(FrameFormat::kYuv420p, out_w, out_h) == FrameFormat::kYuv420p;
  return ChooseColorConversion(settings_.color_conversion, worker_device, p_.media.video.pix_fmt,
                               yuv_round_trip, warning);
}

Result<ArenaGeometry> ArenaPlanner::For(int out_w, int out_h, FrameFormat in_format) const {
  const VideoStreamInfo& v = p_.media.video;
  ArenaGeometry shape;
  shape.chunk_frames = static_cast<uint32_t>(p_.plan.chunk_frames);
  shape.in_width = static_cast<uint32_t>(v.display_width);
  shape.in_height = static_cast<uint32_t>(v.display_height);
  shape.in_format = in_format;
  shape.in_matrix = MatrixForColorSpace(p_.color_path.color_space);
  shape.in_full_range = p_.color_path.full_range ? 1 : 0;
  shape.out_format = OutputFormat(in_format, out_w, out_h);
  shape.out_width = static_cast<uint32_t>(out_w);
  shape.out_height = static_cast<uint32_t>(out_h);
  if (settings_.mode == JobMode::kFaces) {
    shape.face_slots = static_cast<uint32_t>(settings_.faces.max_faces);
    shape.face_size = static_cast<uint32_t>(settings_.faces.size);
    shape.face_blend = static_cast<uint32_t>(settings_.faces.BlendPixels());
  }
  return SizeArena(shape, Demand());
}

std::optional<ArenaGeometry> ArenaPlanner::Guess(ColorConversion* conversion) const {
  const VideoStreamInfo& v = p_.media.video;
  std::string device = "cpu";
  if (settings_.device.kind == DeviceKind::kCuda ||
      (settings_.device.kind == DeviceKind::kAuto && HostHasNvidiaDriver())) {
    device = "cuda:0";
  }
  const int scale = settings_.mode == JobMode::kFaces ? 1 : p_.card_scale.value_or(1);
  const int out_w = v.display_width * scale, out_h = v.display_height * scale;
  *conversion = Conversion(device, out_w, out_h, nullptr);
  Result<ArenaGeometry> g = For(out_w, out_h, InputFormat(*conversion));
  if (!g.ok()) return std::nullopt;
  return *g;
}

bool ArenaPlanner::PageLocks(const ArenaGeometry& geometry) const {
  switch (settings_.page_lock_arena) {
    case PageLockArena::kOn:
      return true;
    case PageLockArena::kOff:
      return false;
    case PageLockArena::kAuto:
      break;
  }
  const int64_t frames = p_.ChunkStartFrame(range_.end_chunk) -
                         p_.ChunkStartFrame(range_.first_chunk);
  return frames > 0 && WorthPageLocking(geometry, static_cast<uint64_t>(frames));
}

void ArenaPlanner::LogReady(const JobArena& arena, int out_w, int out_h,
                            const std::string& worker_device) const {
  const ArenaGeometry& g = arena.geometry;
  spdlog::info("arena {}: {} slots of {} MiB ({} -> {}x{}){}", arena.shm.name(), g.slot_count,
               g.slot_bytes >> 20, p_.plan.chunk_frames, out_w, out_h,
               worker_device.rfind("cuda", 0) != 0 ? ""
               : g.flags & kArenaPageLock          ? ", page-locked in the workers"
                                                   : ", copies staged in the workers");
  if (const uint64_t wanted = ArenaSlotsWanted(Demand()); g.slot_count < wanted) {
    // The decoder then waits for the encoders and the stages take turns instead of overlapping.
    const uint64_t needed_mb = (wanted * g.slot_bytes + (1u << 20) - 1) >> 20;
    spdlog::warn(
        "arena_mb={} holds {} of the {} chunks this pipeline keeps in flight ({} MiB each): the "
        "decoder will wait for the encoders; arena_mb={} or a smaller chunk_frames lets the "
        "stages overlap",
        config_.arena_mb, g.slot_count, wanted, g.slot_bytes >> 20, needed_mb);
  }
}

}  // namespace framemill
