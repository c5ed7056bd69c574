#include "supervisor/job/preview_estimate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace framemill {

const char* Name(PreviewStage stage) {
  switch (stage) {
    case PreviewStage::kDecode:
      return "decode";
    case PreviewStage::kWorkers:
      return "workers";
    case PreviewStage::kEncode:
      return "encode";
  }
  return "unknown";
}

namespace {

double PerFrame(double seconds, int64_t frames) {
  return frames > 0 ? seconds / static_cast<double>(frames) : 0.0;
}

// One worker's time per frame: the chunks after its first when there were any (the first pays
// for the model's warm-up: lazy initialisation, allocator growth, kernel selection), else the
// first chunk, warm-up and all.
double WorkerSecondsPerFrame(const EstimateInputs& in, bool* warmup_excluded) {
  const DispatchStats& d = in.run.dispatch;
  // Each worker's first chunk is its warm-up.
  const int64_t first_chunks = std::max<int64_t>(1, static_cast<int64_t>(d.first_chunk_s.size()));
  const int64_t first =
      std::min(in.sampled_frames, first_chunks * std::max<int64_t>(1, in.preview_chunk_frames));
  const int64_t later_frames = in.sampled_frames - first;
  if (d.later_chunks > 0 && later_frames > 0 && d.later_chunk_s_sum > 0) {
    *warmup_excluded = true;
    return PerFrame(d.later_chunk_s_sum, later_frames);
  }
  *warmup_excluded = false;
  return PerFrame(in.run.stages.workers_busy_s, in.sampled_frames);
}

}  // namespace

PreviewEstimate EstimateJob(const EstimateInputs& in) {
  PreviewEstimate e;
  e.workers = std::max(1, in.workers);
  const StageTimes& st = in.run.stages;
  e.worker_s_per_frame_one = WorkerSecondsPerFrame(in, &e.warmup_excluded);
  e.workers_s_per_frame = e.worker_s_per_frame_one / e.workers;
  e.decode_s_per_frame = PerFrame(in.source_decode_s, in.source_frames_decoded);
  const double encode_one = in.encoder_s_per_frame > 0 ? in.encoder_s_per_frame
                                                       : PerFrame(st.encode_s, in.sampled_frames);
  e.encode_s_per_frame = encode_one / std::max(1, in.encoders);
  e.limiting = PreviewStage::kWorkers;
  double slowest = e.workers_s_per_frame;
  if (e.decode_s_per_frame > slowest) {
    slowest = e.decode_s_per_frame;
    e.limiting = PreviewStage::kDecode;
  }
  if (e.encode_s_per_frame > slowest) {
    slowest = e.encode_s_per_frame;
    e.limiting = PreviewStage::kEncode;
  }
  e.fixed_s = st.prepare_s + st.start_s + st.mux_s + st.stop_s;
  e.faces_s_per_frame = PerFrame(st.faces_s, in.sampled_frames);
  e.duration_s =
      e.fixed_s + (slowest + e.faces_s_per_frame) * static_cast<double>(in.source_frames);

  e.video_bytes = static_cast<int64_t>(
      std::llround(PerFrame(static_cast<double>(in.encoded_bytes), in.encoder_frames) *
                   static_cast<double>(in.source_frames)));
  e.audio_bytes = static_cast<int64_t>(std::llround(in.audio_bits_per_s * in.source_seconds / 8));
  e.output_bytes = e.video_bytes + e.audio_bytes;
  for (const WorkerSnapshot& p : in.run.dispatch.peaks) {
    e.peak_rss_bytes = std::max(e.peak_rss_bytes, p.rss_bytes);
    e.peak_gpu_reserved_bytes = std::max(e.peak_gpu_reserved_bytes, p.gpu_reserved_bytes);
  }

  std::vector<std::string>& a = e.assumptions;
  if (e.faces_s_per_frame > 0) {
    a.push_back(fmt::format(
        "Faces: the face pass's time per frame on the sampled stretches ({:.1f} ms, the "
        "detectors' loading included), for every frame, before the workers start.",
        1000 * e.faces_s_per_frame));
  }
  a.push_back(fmt::format(
      "Duration: fixed costs of the preview's run ({:.1f} s: probe, one worker started and its "
      "model loaded, mux) plus {} frames at the slowest stage's time per frame; the real job's "
      "probe and mux also grow with the file.",
      e.fixed_s, in.source_frames));
  a.push_back(fmt::format(
      "Workers: a worker's time per frame ({}) while {} worker(s) shared one device as the "
      "job's do, divided by the job's {} workers (several GPUs as if each were the first).",
      e.warmup_excluded ? "each worker's first chunk, its warm-up, left out"
                        : "warm-up included: too few frames for a second chunk",
      std::max(1, in.run_workers), e.workers));
  a.push_back(fmt::format(
      "Decode: the seeking decoders' time per frame decoded ({} frames in {:.2f} s, process "
      "start included), which overestimates a sequential decode.",
      in.source_frames_decoded, in.source_decode_s));
  if (in.encoder_s_per_frame > 0) {
    a.push_back(fmt::format(
        "Encode: the sampled stretches ({} frames, a cut between stretches) encoded again "
        "with the job's encoder settings, less the encoder's start, over {} encoder(s); cuts "
        "cost more than a continuous shot, so this leans high.",
        in.encoder_frames, std::max(1, in.encoders)));
  } else {
    a.push_back(fmt::format(
        "Encode: the preview's encode time per frame over {} encoder(s), segment start and "
        "flush included (an overestimate).",
        std::max(1, in.encoders)));
  }
  a.push_back(
      "Output size: bytes per frame of that encode times the frames; each stretch starts with a "
      "cut, encoded almost as a keyframe, so this leans high (an upper bound for most sources).");
  if (in.audio_rate_unknown) {
    a.push_back("Audio: a stream gives no bit rate and is counted as 0 bytes.");
  }
  a.push_back(
      "Memory: the peak of the preview's worker; a model whose memory grows with the frames it "
      "has seen (a leak) needs the job's recycle limits, not this figure.");
  return e;
}

nlohmann::json PreviewEstimate::ToJson() const {
  return {{"duration_s", duration_s},
          {"limiting_stage", Name(limiting)},
          {"seconds_per_frame",
           {{"decode", decode_s_per_frame},
            {"workers", workers_s_per_frame},
            {"encode", encode_s_per_frame},
            {"faces", faces_s_per_frame}}},
          {"worker_seconds_per_frame", worker_s_per_frame_one},
          {"warmup_excluded", warmup_excluded},
          {"fixed_s", fixed_s},
          {"output_bytes", output_bytes},
          {"video_bytes", video_bytes},
          {"audio_bytes", audio_bytes},
          {"peak_rss_bytes_per_worker", peak_rss_bytes},
          {"peak_gpu_reserved_bytes_per_worker", peak_gpu_reserved_bytes},
          {"workers", workers},
          {"assumptions", assumptions}};
}

std::string PreviewEstimate::ToText() const {
  const double mib = 1048576.0;
  std::string text = fmt::format(
      "estimate: the job takes about {:.0f} s ({:.1f} min) on this machine; limited by {} "
      "(per frame: decode {:.1f} ms, workers {:.1f} ms, encode {:.1f} ms{})\n",
      duration_s, duration_s / 60, Name(limiting), 1000 * decode_s_per_frame,
      1000 * workers_s_per_frame, 1000 * encode_s_per_frame,
      faces_s_per_frame > 0
          ? fmt::format("; before them the face pass {:.1f} ms", 1000 * faces_s_per_frame)
          : std::string());
  text += fmt::format(
      "estimate: output at most about {:.1f} MiB (video {:.1f} MiB, audio {:.1f} MiB)\n",
      output_bytes / mib, video_bytes / mib, audio_bytes / mib);
  text += fmt::format(
      "estimate: peak memory per worker: rss {:.0f} MiB, gpu reserved {:.0f} MiB ({} workers)\n",
      peak_rss_bytes / mib, peak_gpu_reserved_bytes / mib, workers);
  for (const std::string& s : assumptions) text += "assumes: " + s + "\n";
  return text;
}

}  // namespace framemill
