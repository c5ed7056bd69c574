// The preview's estimate (supervisor/job/preview_estimate.h): the slowest stage limits, the workers'
// warm-up chunk is left out when a later chunk was measured, sizes scale with the frames.
#include <doctest/doctest.h>

#include "supervisor/job/preview_estimate.h"

using framemill::EstimateInputs;
using framemill::PreviewEstimate;
using framemill::PreviewStage;

namespace {

// 12 sampled frames in chunks of 4: a 1 s warm-up chunk, then two chunks of 0.4 s.
EstimateInputs Inputs() {
  EstimateInputs in;
  in.source_frames = 1000;
  in.source_seconds = 40;
  in.sampled_frames = 12;
  in.preview_chunk_frames = 4;
  in.run.stages.prepare_s = 1;
  in.run.stages.start_s = 2;
  in.run.stages.mux_s = 0.25;
  in.run.stages.stop_s = 0.25;  // the workers' exit: a fixed cost as the mux is
  in.run.stages.workers_busy_s = 1.8;
  in.run.stages.encode_s = 0.12;  // 10 ms a frame, start included (not used: measured apart)
  in.encoder_s_per_frame = 0.004;
  in.run.dispatch.first_chunk_s = {1.0};
  in.run.dispatch.later_chunk_s_sum = 0.8;
  in.run.dispatch.later_chunks = 2;
  in.run.dispatch.peaks = {{0, 1, 100, 12, 300u << 20, 0, ""},
                           {0, 2, 101, 0, 200u << 20, 1u << 30, ""}};
  in.encoder_frames = 48;
  in.encoded_bytes = 480000;  // 10 kB a frame
  in.source_decode_s = 0.5;
  in.source_frames_decoded = 100;  // 5 ms a frame
  in.audio_bits_per_s = 128000;
  in.workers = 2;
  return in;
}

}  // namespace

TEST_CASE("preview estimate: workers without their warm-up, divided among the job's workers") {
  PreviewEstimate e = framemill::EstimateJob(Inputs());
  CHECK(e.warmup_excluded);
  CHECK(e.worker_s_per_frame_one == doctest::Approx(0.1));  // 0.8 s over the 8 later frames
  CHECK(e.workers_s_per_frame == doctest::Approx(0.05));
  CHECK(e.limiting == PreviewStage::kWorkers);
  CHECK(e.fixed_s == doctest::Approx(3.5));
  CHECK(e.duration_s == doctest::Approx(3.5 + 1000 * 0.05));
  CHECK(e.video_bytes == 10000 * 1000);
  CHECK(e.audio_bytes == 128000 / 8 * 40);
  CHECK(e.output_bytes == e.video_bytes + e.audio_bytes);
  CHECK(e.peak_rss_bytes == 300u << 20);
  CHECK(e.peak_gpu_reserved_bytes == 1u << 30);
  CHECK(e.ToJson().at("limiting_stage") == "workers");
}

TEST_CASE("preview estimate: one chunk only keeps its warm-up, and the slowest stage limits") {
  EstimateInputs in = Inputs();
  in.run.dispatch.later_chunks = 0;
  in.run.dispatch.later_chunk_s_sum = 0;
  in.preview_chunk_frames = 12;
  PreviewEstimate e = framemill::EstimateJob(in);
  CHECK(!e.warmup_excluded);
  CHECK(e.worker_s_per_frame_one == doctest::Approx(0.15));  // 1.8 s over 12 frames

  in.workers = 64;  // workers now take 2.3 ms a frame: decoding (5 ms) limits
  e = framemill::EstimateJob(in);
  CHECK(e.limiting == PreviewStage::kDecode);
  CHECK(e.duration_s == doctest::Approx(3.5 + 1000 * 0.005));
  in.encoder_s_per_frame = 0.1;  // 100 ms a frame
  e = framemill::EstimateJob(in);
  CHECK(e.limiting == PreviewStage::kEncode);
  in.encoder_s_per_frame = 0;  // not measured: the run's encode time, 1.2 s over 12 frames
  in.run.stages.encode_s = 1.2;
  e = framemill::EstimateJob(in);
  CHECK(e.encode_s_per_frame == doctest::Approx(0.1));
  CHECK(e.limiting == PreviewStage::kEncode);
  CHECK(std::string(framemill::Name(e.limiting)) == "encode");
}

TEST_CASE("preview estimate: every worker's first chunk is its warm-up") {
  EstimateInputs in = Inputs();
  in.sampled_frames = 24;  // 6 chunks of 4: two first chunks (2 s), four later ones (4 s)
  in.run.dispatch.first_chunk_s = {1.0, 1.0};
  in.run.dispatch.later_chunk_s_sum = 4.0;
  in.run.dispatch.later_chunks = 4;
  in.run_workers = 2;
  PreviewEstimate e = framemill::EstimateJob(in);
  CHECK(e.warmup_excluded);
  CHECK(e.worker_s_per_frame_one == doctest::Approx(0.25));  // 4 s over the 16 later frames
  CHECK(e.workers_s_per_frame == doctest::Approx(0.125));    // the job's 2 workers
}

TEST_CASE("preview estimate: in face mode the face pass adds its time for every frame") {
  EstimateInputs in = Inputs();
  in.run.stages.faces_s = 0.6;  // 50 ms a sampled frame
  PreviewEstimate e = framemill::EstimateJob(in);
  CHECK(e.faces_s_per_frame == doctest::Approx(0.05));
  // Before the pipeline, not beside it: added to the slowest stage's time.
  CHECK(e.duration_s == doctest::Approx(3.5 + 1000 * (0.05 + 0.05)));
  CHECK(e.ToJson().at("seconds_per_frame").at("faces") == doctest::Approx(0.05));
  CHECK(e.ToText().find("before them the face pass 50.0 ms") != std::string::npos);
  bool said = false;
  for (const std::string& a : e.assumptions) said = said || a.rfind("Faces: ", 0) == 0;
  CHECK(said);
  // Frames mode: nothing of it.
  PreviewEstimate frames = framemill::EstimateJob(Inputs());
  CHECK(frames.faces_s_per_frame == 0);
  CHECK(frames.ToText().find("face pass") == std::string::npos);
}
