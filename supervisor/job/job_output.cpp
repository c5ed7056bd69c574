#include "supervisor/job/job_output.h"

#include <utility>

#include "common/log.h"

namespace framemill {

MuxRequest OutputRequest(const Config& config, const JobSpec& job, const PreparedJob& prepared,
                         const JobFiles& files, uint32_t output_reader_uid,
                         const OutputGeometry& geometry, const EncoderSettings& encoder,
                         int scratch_fd, const std::string& scratch) {
  MuxRequest mux;
  mux.ffmpeg = config.ffmpeg;
  mux.ffprobe = config.ffprobe;
  mux.source = prepared.source;
  mux.source_info = &prepared.media;
  mux.frame_rate = prepared.media.video.frame_rate;
  mux.scratch_dir = scratch;
  mux.scratch_fd = scratch_fd;
  mux.output_dir_fd = files.output_dir.get();
  mux.output_name = files.output_name;
  mux.output = job.output;
  mux.overwrite = job.overwrite || files.output_is_ours;
  mux.output_reader_uid = output_reader_uid;
  mux.geometry = geometry;
  mux.expected_pix_fmt = encoder.pix_fmt;
  mux.expected_color = prepared.color_path;
  mux.codec = encoder.codec;
  return mux;
}

JobOutput::JobOutput(MuxRequest request, std::optional<Result<CarriedMetadata>> carried)
    : request_(std::move(request)) {
  if (carried.has_value() && carried->ok()) request_.source_carried = std::move(**carried);
}

MuxRequest JobOutput::For(const SegmentList& segments) const {
  MuxRequest rq = request_;
  rq.segments = segments.paths;
  rq.segment_frames = segments.frames;
  return rq;
}

void JobOutput::StartLive(bool asked, const SegmentList& segments, int64_t ready) {
  // (Metadata that could not be read: the mux after the render reads it again.)
  if (!asked || !request_.source_carried.has_value()) return;
  live_ = LiveMux::Start(For(segments));
  for (int64_t i = 0; i < ready; ++i) live_->SegmentReady(static_cast<size_t>(i));
}

void JobOutput::SegmentReady(int64_t index) {
  if (live_ != nullptr) live_->SegmentReady(static_cast<size_t>(index));
}

Status JobOutput::Finish(const SegmentList& segments, const std::string& output,
                         JobReport* report) {
  if (live_ != nullptr) {
    Status live = live_->Finish();
    live_.reset();
    if (live.ok()) {
      report->mux = "live";
      return live;
    }
    if (live.code() == StatusCode::kNoSpace) return live;  // joining again needs the same space
    const std::string warning =
        "the join beside the render failed (" + live.ToString() + "); joined again at the end";
    spdlog::warn("{}: {}", output, warning);
    report->warnings.push_back(warning);
  }
  report->mux = "after";
  return MuxAndVerify(For(segments));
}

}  // namespace framemill
