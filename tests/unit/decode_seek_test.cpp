#include <doctest/doctest.h>

#include "supervisor/media/decode_seek.h"

using namespace framemill;

namespace {

VideoStreamInfo Constant(double start, int64_t frames) {
  VideoStreamInfo v;
  v.frame_rate = {25, 1};
  v.start_time = start;
  v.frame_count = frames;
  return v;
}

}  // namespace

TEST_CASE("seek: the trim falls half way between the frame before and the first wanted") {
  const VideoStreamInfo v = Constant(0.5, 1000);
  const DecodeSeek s = SeekFor(v, /*container_start_s=*/0.5, 100, 0);
  REQUIRE(s.seeks());
  CHECK(s.first_frame == 100);
  CHECK(s.trim_start_s == doctest::Approx(0.5 + 99.5 / 25));
  // -ss is relative to the container's start, and lands kSeekMarginFrames early.
  CHECK(s.input_seek_s == doctest::Approx(100.0 / 25 - kSeekMarginFrames / 25.0));
  const std::vector<std::string> in = SeekInputArguments(s);
  CHECK(in.at(0) == "-copyts");
  CHECK(in.at(1) == "-noaccurate_seek");
  CHECK(in.at(2) == "-ss");
  CHECK(SeekFilter(s) == "trim=start=4.480000");
  CHECK(SeekOutputArguments(s).empty());
  CHECK(SeekOutputArguments(SeekFor(v, 0.5, 100, 40)) ==
        std::vector<std::string>{"-frames:v", "40"});
}

TEST_CASE("seek: a variable-rate video seeks by its own frame times") {
  VideoStreamInfo v = Constant(0, 5);
  v.frame_times = {0.0, 0.04, 0.5, 0.6, 2.0};
  v.constant_rate = false;
  const DecodeSeek s = SeekFor(v, 0, 4, 0);
  REQUIRE(s.seeks());
  CHECK(s.trim_start_s == doctest::Approx(1.3));
  CHECK(s.input_seek_s == doctest::Approx(2.0 - 8 / 25.0));
  CHECK(FrameTime(v, 2) == doctest::Approx(0.5));
}

TEST_CASE("seek: none from frame 0, near the start, past the end, or without timestamps") {
  const VideoStreamInfo v = Constant(0, 100);
  CHECK_FALSE(SeekFor(v, 0, 0, 0).seeks());
  CHECK(SeekFor(v, 0, 0, 0).max_frames == 0);
  CHECK_FALSE(SeekFor(v, 0, 100, 0).seeks());
  // Frame 3: a trim but no -ss (the seek point would be before the start).
  const DecodeSeek early = SeekFor(v, 0, 3, 0);
  CHECK(early.seeks());
  CHECK(early.input_seek_s < 0);
  CHECK(SeekInputArguments(early) == std::vector<std::string>{"-copyts", "-noaccurate_seek"});
  VideoStreamInfo raw = v;
  raw.timestamps = false;
  CHECK_FALSE(SeekFor(raw, 0, 50, 0).seeks());
  CHECK(SeekInputArguments(SeekFor(raw, 0, 50, 0)).empty());
  CHECK(SeekFilter(SeekFor(raw, 0, 50, 0)).empty());
}
