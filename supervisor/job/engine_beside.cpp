#include "supervisor/job/engine_beside.h"

#include <fcntl.h>

#include <optional>
#include <utility>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/engines/engine_build.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/ffmpeg_pipes.h"

namespace framemill {

EngineBeside::EngineBeside(EngineBesideSetup setup, std::function<void(ModelOffer)> offer)
    : setup_(std::move(setup)), offer_(std::move(offer)), thread_([this] { Run(); }) {}

EngineBeside::~EngineBeside() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

Status EngineBeside::WriteCheckFrames(const std::string& path) const {
  const PreparedJob& p = *setup_.prepared;
  const VideoStreamInfo& v = p.media.video;
  const int64_t batch = setup_.key.batch;
  // A tenth into the video, where it has timestamps to seek by: its first frames are often a
  // black fade or a title.
  const int64_t first = v.timestamps && v.frame_count > 10 * batch ? v.frame_count / 10 : 0;
  DecodeSeek seek = SeekFor(v, p.media.start_time, first, batch);
  seek.max_frames = batch;
  Result<std::unique_ptr<FrameReader>> reader =
      FrameReader::Start(setup_.ffmpeg, p.source, v, setup_.log_path, FrameFormat::kRgb24,
                         p.geometry_filters, /*accurate_color=*/true, seek);
  if (!reader.ok()) return reader.status();
  const size_t frame_bytes = static_cast<size_t>(v.display_width) * v.display_height * 3;
  std::string frames(frame_bytes * static_cast<size_t>(batch), '\0');
  for (int64_t i = 0; i < batch; ++i) {
    Result<bool> got = (*reader)->Read(reinterpret_cast<uint8_t*>(frames.data()) +
                                       frame_bytes * static_cast<size_t>(i));
    if (!got.ok()) return got.status();
    if (!*got) {
      return Status(StatusCode::kInputInvalid, "the video gave " + std::to_string(i) + " of " +
                                                   std::to_string(batch) + " frames from frame " +
                                                   std::to_string(first));
    }
  }
  (void)(*reader)->Finish();
  return AtomicWriteFile(path, frames, 0600);
}

void EngineBeside::Run() {
  ModelOffer offer;
  offer.probe_width = static_cast<uint32_t>(setup_.key.width);
  offer.probe_height = static_cast<uint32_t>(setup_.key.height);
  offer.probe_batch = static_cast<uint32_t>(setup_.key.batch);
  if (!setup_.stand_in.empty()) {
    offer.model = UniqueFd(::open(setup_.stand_in.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!offer.model.valid()) return spdlog::warn("{}: cannot open the stand-in", setup_.stand_in);
    offer.label = "the stand-in engine " + setup_.stand_in;
    return offer_(std::move(offer));
  }
  EngineBuildRequest r;
  r.model_fd = setup_.model_fd;
  r.model_label = setup_.model_label;
  r.key = setup_.key;
  r.gpu_index = setup_.gpu_index;
  r.sandbox = setup_.sandbox;
  r.write_check_frames = [this](const std::string& path) { return WriteCheckFrames(path); };
  r.stop = &stop_;
  const uint64_t t0 = MonotonicMs();
  Result<CachedEngine> built = BuildEngine(setup_.cache_dir, r);
  if (!built.ok()) {
    if (built.status().code() == StatusCode::kCancelled) {
      return spdlog::info("the compiled engine's build stopped with the job, {} s in",
                          (MonotonicMs() - t0) / 1000);
    }
    return spdlog::warn("no compiled engine for the job: {}; it runs TorchScript to its end",
                        built.status().message());
  }
  int scale = 0;
  Result<std::optional<CachedEngine>> found =
      FindEngine(setup_.cache_dir, setup_.key, &offer.model, &scale);
  if (!found.ok() || !found->has_value()) {
    return spdlog::warn("the compiled engine {} was built but is not in the cache: {}", built->id,
                        found.ok() ? "gone" : found.status().message());
  }
  offer.label = "the compiled engine " + built->id;
  offer_(std::move(offer));
}

}  // namespace framemill
