// The pure pieces of a job's stages (supervisor/job/): the output's size from the workers' probe,
// the arena a job needs and the one guessed before the probe, and the range a run renders.
#include <doctest/doctest.h>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/job_file.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/job/output_plan.h"
#include "supervisor/job/prepared_job.h"

using framemill::ArenaGeometry;
using framemill::ArenaPlanner;
using framemill::ChooseRange;
using framemill::ColorConversion;
using framemill::Config;
using framemill::FrameFormat;
using framemill::JobMode;
using framemill::JobOptions;
using framemill::JobPlan;
using framemill::JobSpec;
using framemill::OutputSize;
using framemill::OutputSizeFor;
using framemill::PreparedJob;
using framemill::ProbeShape;
using framemill::RenderRange;
using framemill::Result;
using framemill::StatusCode;
using framemill::VideoStreamInfo;

namespace {

VideoStreamInfo Video(int w, int h) {
  VideoStreamInfo v;
  v.width = v.display_width = w;
  v.height = v.display_height = h;
  v.frame_count = 100;
  v.pix_fmt = "yuv420p";
  return v;
}

PreparedJob Prepared(int w, int h, int64_t frames, const JobSpec& job) {
  PreparedJob p;
  p.media.video = Video(w, h);
  p.media.video.frame_count = frames;
  Result<JobPlan> plan = framemill::PlanJob(frames, 25.0, job.settings);
  REQUIRE(plan.ok());
  p.plan = *plan;
  p.color_path.color_space = "bt709";
  return p;
}

}  // namespace

TEST_CASE("output size: the model's scale from the probe applies to the upright frame") {
  const ProbeShape probe{64, 64, 1};
  Result<OutputSize> x2 = OutputSizeFor(Video(320, 180), JobMode::kFrames, probe, 128, 128);
  REQUIRE(x2.ok());
  CHECK(x2->width == 640);
  CHECK(x2->height == 360);
  // A scale that does not divide the frame exactly is the model's fault, named.
  Result<OutputSize> odd = OutputSizeFor(Video(321, 180), JobMode::kFrames, probe, 96, 96);
  REQUIRE(!odd.ok());
  CHECK(odd.status().code() == StatusCode::kModelInvalid);
  CHECK(odd.status().message().find("not a whole scale of 321x180") != std::string::npos);
  CHECK(!OutputSizeFor(Video(320, 180), JobMode::kFrames, probe, 0, 128).ok());
}

TEST_CASE("output size: face mode keeps the frame's size, the face model must map its square") {
  const ProbeShape face{512, 512, 1};
  Result<OutputSize> same = OutputSizeFor(Video(1280, 720), JobMode::kFaces, face, 1024, 1024);
  REQUIRE(same.ok());
  CHECK(same->width == 1280);
  CHECK(same->height == 720);
  Result<OutputSize> bad = OutputSizeFor(Video(1280, 720), JobMode::kFaces, face, 1024, 512);
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == StatusCode::kModelInvalid);
  CHECK(!OutputSizeFor(Video(1280, 720), JobMode::kFaces, face, 768, 768).ok());
}

TEST_CASE("arena planner: the guess scales by the card, the input format follows the conversion") {
  JobSpec job;
  job.settings.device.kind = framemill::DeviceKind::kCpu;
  Config config;
  PreparedJob p = Prepared(320, 180, 100, job);
  p.card_scale = 4;
  RenderRange range;
  range.end_chunk = static_cast<int64_t>(p.plan.chunks.size());
  const ArenaPlanner planner(p, job.settings, config, range);
  ColorConversion conversion = ColorConversion::kDevice;
  std::optional<ArenaGeometry> guess = planner.Guess(&conversion);
  REQUIRE(guess.has_value());
  CHECK(guess->out_width == 1280);
  CHECK(guess->out_height == 720);
  CHECK(guess->in_width == 320);
  CHECK(conversion != ColorConversion::kAuto);
  CHECK(planner.InputFormat(ColorConversion::kDevice) == FrameFormat::kYuv420p);
  CHECK(planner.InputFormat(ColorConversion::kAccurate) == FrameFormat::kRgb24);
  p.media.video.bits_per_component = 10;
  CHECK(planner.InputFormat(ColorConversion::kAccurate) == FrameFormat::kRgb48);
  // The arena the probe asks for: a different output size is a different arena.
  Result<ArenaGeometry> x2 = planner.For(640, 360, FrameFormat::kRgb24);
  REQUIRE(x2.ok());
  CHECK(!framemill::SameArenaGeometry(*guess, *x2));
  CHECK(x2->slot_count >= 1);
}

TEST_CASE("arena planner: auto on a CPU takes YUV where the worker converts both ways") {
  JobSpec job;
  Config config;
  PreparedJob p = Prepared(320, 180, 100, job);
  p.encoder.pix_fmt = "yuv420p";
  RenderRange range;
  range.end_chunk = static_cast<int64_t>(p.plan.chunks.size());
  const ArenaPlanner planner(p, job.settings, config, range);
  CHECK(planner.Conversion("cpu", 640, 360, nullptr) == ColorConversion::kDevice);
  CHECK(planner.Conversion("cuda:0", 640, 360, nullptr) == ColorConversion::kDevice);
  // Where the output goes back through RGB the CPU keeps swscale's RGB; a GPU takes YUV still.
  CHECK(planner.Conversion("cpu", 641, 361, nullptr) == ColorConversion::kAccurate);
  CHECK(planner.Conversion("cuda:0", 641, 361, nullptr) == ColorConversion::kDevice);
  p.color_path.full_range = true;
  CHECK(planner.Conversion("cpu", 640, 360, nullptr) == ColorConversion::kAccurate);
  p.color_path.full_range = false;
  p.encoder.pix_fmt = "yuv444p";
  CHECK(planner.Conversion("cpu", 640, 360, nullptr) == ColorConversion::kAccurate);
  p.encoder.pix_fmt = "yuv420p";
  job.settings.mode = JobMode::kFaces;
  CHECK(planner.Conversion("cpu", 640, 360, nullptr) == ColorConversion::kAccurate);
  job.settings.mode = JobMode::kFrames;
  job.settings.color_conversion = ColorConversion::kAccurate;
  CHECK(planner.Conversion("cpu", 640, 360, nullptr) == ColorConversion::kAccurate);
  // The guess before any worker: the CPU here, the frame's own size.
  job.settings.color_conversion = ColorConversion::kAuto;
  job.settings.device.kind = framemill::DeviceKind::kCpu;
  ColorConversion guessed = ColorConversion::kAuto;
  REQUIRE(planner.Guess(&guessed).has_value());
  CHECK(guessed == ColorConversion::kDevice);
}

TEST_CASE("arena planner: page-locking as set, and with auto only for enough frames") {
  JobSpec job;
  Config config;
  const PreparedJob p = Prepared(320, 180, 100, job);
  RenderRange range;
  range.end_chunk = static_cast<int64_t>(p.plan.chunks.size());
  Result<ArenaGeometry> g = ArenaPlanner(p, job.settings, config, range).For(320, 180,
                                                                             FrameFormat::kRgb24);
  REQUIRE(g.ok());
  job.settings.page_lock_arena = framemill::PageLockArena::kOn;
  CHECK(ArenaPlanner(p, job.settings, config, range).PageLocks(*g));
  job.settings.page_lock_arena = framemill::PageLockArena::kOff;
  CHECK(!ArenaPlanner(p, job.settings, config, range).PageLocks(*g));
  job.settings.page_lock_arena = framemill::PageLockArena::kAuto;
  range.first_chunk = range.end_chunk;  // every segment resumed: nothing to render
  CHECK(!ArenaPlanner(p, job.settings, config, range).PageLocks(*g));
}

TEST_CASE("render range: a whole job renders every segment and chunk") {
  JobSpec job;
  const PreparedJob p = Prepared(320, 180, 1000, job);
  Result<RenderRange> r = ChooseRange(job, p.plan, JobOptions());
  REQUIRE(r.ok());
  CHECK(r->seg_begin == 0);
  CHECK(r->seg_end == static_cast<int64_t>(p.plan.segments.size()));
  CHECK(r->end_chunk == static_cast<int64_t>(p.plan.chunks.size()));
  CHECK(p.ChunkStartFrame(r->end_chunk) == 1000);
  CHECK(p.ChunkStartFrame(0) == 0);
}
