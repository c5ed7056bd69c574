// The estimate `framemill preview` prints: how long the whole job would take on this machine,
// how large its output would be and how much memory each worker needs, extrapolated from the
// preview's own run of the real pipeline on a few sampled frames. Pure functions: thread-safe.
//
// The model is the pipeline's: decoder, workers and encoders run at once, so the job takes its
// fixed costs plus the source's frames times the per-frame time of the slowest stage (the one
// named as limiting). Everything here is rough and says so in `assumptions`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/job/job_runner.h"

namespace framemill {

// The pipeline's stages, as far as the estimate separates them.
enum class PreviewStage { kDecode, kWorkers, kEncode };
const char* Name(PreviewStage stage);  // "decode", "workers", "encode"

// What the preview measured and what it knows of the job.
struct EstimateInputs {
  int64_t source_frames = 0;         // frames of the whole source (header count or duration x rate)
  double source_seconds = 0;         // the source's duration
  int64_t sampled_frames = 0;        // frames the preview ran through the pipeline (K stretches)
  int64_t preview_chunk_frames = 0;  // chunk size of the preview's run (its first chunk is warm-up)
  JobReport run;                     // the preview's run of the pipeline on the sampled frames
  double source_decode_s = 0;        // wall time of the seeking decoders (process start included)
  int64_t source_frames_decoded = 0;  // frames those decoders decoded (ffmpeg's own count)
  // One encoder's time per frame measured apart from the pipeline (the sampled run's output
  // encoded again, less an encode of one frame: the encoder's start left out); 0 = not
  // measured, then the sampled run's encode time per frame, start and flush included.
  double encoder_s_per_frame = 0;
  int64_t encoder_frames = 0;       // frames of that measurement
  int64_t encoded_bytes = 0;        // what it wrote (video only)
  double audio_bits_per_s = 0;      // all audio streams of the source together; 0 = none/unknown
  bool audio_rate_unknown = false;  // a stream whose bit rate the container does not give
  int workers = 1;                  // the job's workers
  int run_workers = 1;              // the sampled run's: those the job puts on one device
  int encoders = 1;                 // the job's encoder threads
};

struct PreviewEstimate {
  double duration_s = 0;  // the whole job, seconds
  PreviewStage limiting = PreviewStage::kWorkers;
  // Seconds per frame of each stage, already divided by the stage's parallelism (workers,
  // encoders): the largest one limits.
  double decode_s_per_frame = 0;
  double workers_s_per_frame = 0;
  double encode_s_per_frame = 0;
  double worker_s_per_frame_one = 0;     // one worker's time per frame (before dividing)
  bool warmup_excluded = false;          // worker time measured on chunks after the first
  double fixed_s = 0;                    // start-up (probe, workers started, model loaded) + mux
  // Face mode: the face pass's time per frame (detection, tracking; it runs before the workers
  // start, so it adds to the duration rather than overlapping a stage); 0 in frames mode.
  double faces_s_per_frame = 0;
  int64_t video_bytes = 0;               // the output's video stream, estimated (an upper bound)
  int64_t audio_bytes = 0;               // the source's audio, copied as it is
  int64_t output_bytes = 0;              // both
  uint64_t peak_rss_bytes = 0;           // one worker's peak private resident memory
  uint64_t peak_gpu_reserved_bytes = 0;  // one worker's peak CUDA reserved memory (0 on a CPU)
  int workers = 1;
  std::vector<std::string> assumptions;  // each one sentence

  // Stable field names (README.md "framemill preview"): duration_s, limiting_stage,
  // seconds_per_frame {decode, workers, encode, faces}, worker_seconds_per_frame, warmup_excluded,
  // fixed_s, output_bytes, video_bytes, audio_bytes, peak_rss_bytes_per_worker,
  // peak_gpu_reserved_bytes_per_worker, workers, assumptions.
  nlohmann::json ToJson() const;
  // Several lines of text for people, ending with the assumptions.
  std::string ToText() const;
};

PreviewEstimate EstimateJob(const EstimateInputs& in);

}  // namespace framemill
