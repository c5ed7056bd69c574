// The worker's profile (worker/batch/batch_profile.h, worker/batch/profile_sums.h): the first
// chunk's figures kept apart from the later chunks' (so that warm-up and steady state are told
// apart), the host clock's marks on the CPU, and nothing at all when the profile is off.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/clock.h"
#include "common/env_knobs.h"
#include "worker/batch/batch_profile.h"
#include "worker/batch/profile_sums.h"

using namespace framemill;

namespace {

StageSums Chunk(double model_ms, int64_t frames) {
  StageSums c;
  c.model = model_ms;
  c.wall = model_ms + 1;
  c.frames = frames;
  return c;
}

// Spins until the monotonic clock has moved by at least `us` (the marks around it differ by that).
void Pass(uint64_t us) {
  const uint64_t t0 = MonotonicUs();
  while (MonotonicUs() - t0 < us) {
  }
}

}  // namespace

TEST_CASE("profile sums: the first chunk is kept apart from the later ones") {
  ProfileSums sums;
  CHECK(sums.Line().empty());
  // The warm-up at 100 ms a frame, then the steady state at 10.
  sums.AddChunk(Chunk(800, 8));
  for (int i = 0; i < 3; ++i) sums.AddChunk(Chunk(80, 8));
  CHECK(sums.first().chunks == 1);
  CHECK(sums.first().frames == 8);
  CHECK(sums.first().model == doctest::Approx(800));
  CHECK(sums.later().chunks == 3);
  CHECK(sums.later().frames == 24);
  CHECK(sums.later().model == doctest::Approx(240));
  const std::string line = sums.Line();
  INFO(line);
  CHECK(line.find("first chunk: 8 frames, wall 801.000 ms, per frame ms: upload 0.000, "
                  "to_model 0.000, model 100.000") != std::string::npos);
  CHECK(line.find("later chunks: 3 chunks, 24 frames, per frame ms: upload 0.000, to_model "
                  "0.000, model 10.000") != std::string::npos);
  // A report clears the later chunks; the first stays as it was.
  sums.ClearLater();
  CHECK(sums.first().model == doctest::Approx(800));
  CHECK(sums.later().chunks == 0);
  CHECK(sums.Line().find("later chunks: none") != std::string::npos);
  sums.AddChunk(Chunk(40, 4));
  CHECK(sums.first().frames == 8);
  CHECK(sums.later().frames == 4);
}

TEST_CASE("batch profile: on the host the marks come from the clock, the first chunk apart") {
  BatchProfile p(/*on_device=*/false, /*enabled=*/true);
  REQUIRE(p.enabled());
  auto chunk = [&p](int64_t batches, int64_t frames) {
    p.BeginChunk(batches);
    for (int64_t b = 0; b < batches; ++b) {
      p.Mark(b, ProfileMark::kToModelStart);
      Pass(200);
      p.Mark(b, ProfileMark::kModelStart);
      Pass(1000);
      p.Mark(b, ProfileMark::kModelEnd);
      Pass(200);
      p.Mark(b, ProfileMark::kFromModelEnd);
    }
    p.EndChunk(frames);
  };
  chunk(2, 4);
  REQUIRE(p.sums() != nullptr);
  const StageSums& first = p.sums()->first();
  CHECK(first.chunks == 1);
  CHECK(first.frames == 4);
  CHECK(first.model >= 2.0);  // two batches of at least 1 ms each
  CHECK(first.to_model >= 0.4);
  CHECK(first.from_model >= 0.4);
  CHECK(first.upload == 0);  // no upload or download on the host
  CHECK(first.download == 0);
  // Marks are whole microseconds, turned into ms: with no microsecond between one batch's last
  // mark and the next one's first, the span equals the parts' sum, which rounds differently (it
  // failed once in CI as 7.059 >= 7.059). A nanosecond of slack.
  CHECK(first.span >= first.to_model + first.model + first.from_model - 1e-6);
  CHECK(first.wall >= first.span);
  CHECK(first.between == 0);  // nothing before the first chunk
  CHECK(first.host_copy == 0);  // no staged copies
  chunk(1, 2);
  CHECK(p.sums()->first().frames == 4);  // unchanged by the later chunk
  CHECK(p.sums()->later().chunks == 1);
  CHECK(p.sums()->later().frames == 2);
  CHECK(p.sums()->later().model >= 1.0);
  // Marks of a batch past the chunk's are ignored, not written out of bounds.
  p.BeginChunk(1);
  p.Mark(5, ProfileMark::kModelStart);
  p.EndChunk(1);
  CHECK(p.sums()->later().chunks == 2);
  // Staged copies' host time is summed per chunk, and starts again at each chunk.
  p.BeginChunk(1);
  p.AddHostCopy(3.0);
  p.AddHostCopy(1.5);
  p.EndChunk(2);
  CHECK(p.sums()->later().host_copy == doctest::Approx(4.5));
  p.BeginChunk(1);
  p.EndChunk(2);
  CHECK(p.sums()->later().host_copy == doctest::Approx(4.5));
  // 4.5 ms over the later chunks' 7 frames
  CHECK(p.sums()->Line().find("host_copy 0.643;") != std::string::npos);
}

TEST_CASE("batch profile: off, staged copies' time is not kept") {
  BatchProfile p(/*on_device=*/false, /*enabled=*/false);
  p.AddHostCopy(3.0);
  CHECK(p.sums() == nullptr);
}

TEST_CASE("batch profile: off, it records nothing, and the environment turns it on") {
  BatchProfile off(/*on_device=*/false, /*enabled=*/false);
  CHECK_FALSE(off.enabled());
  CHECK(off.sums() == nullptr);
  off.BeginChunk(1);
  off.Mark(0, ProfileMark::kModelStart);
  off.EndChunk(1);
  CHECK(off.sums() == nullptr);
  ::setenv("FRAMEMILL_WORKER_PROFILE", "0", 1);
  ReadKnobs();
  CHECK_FALSE(BatchProfile::EnabledByEnvironment());
  ::setenv("FRAMEMILL_WORKER_PROFILE", "1", 1);
  ReadKnobs();
  CHECK(BatchProfile::EnabledByEnvironment());
  ::unsetenv("FRAMEMILL_WORKER_PROFILE");
  ReadKnobs();
  CHECK_FALSE(BatchProfile::EnabledByEnvironment());
}

TEST_CASE(
    "batch profile: back to back, a chunk ends after the next starts, a failed one is dropped") {
  BatchProfile p(/*on_device=*/false, /*enabled=*/true);
  // Durations a factor of ten apart, so that a loaded machine's preemption of a short one cannot
  // make it pass for a long one.
  auto model = [&p](int64_t us) {  // one batch's model call of `us` µs, in the newest chunk
    p.Mark(0, ProfileMark::kModelStart);
    Pass(us);
    p.Mark(0, ProfileMark::kModelEnd);
    p.Mark(0, ProfileMark::kFromModelEnd);
  };
  p.BeginChunk(1);  // a: its output pending while b starts
  model(1000);
  p.BeginChunk(1);  // b
  model(60000);
  p.EndChunk(3);  // a's: the oldest open chunk
  REQUIRE(p.sums() != nullptr);
  CHECK(p.sums()->first().frames == 3);
  CHECK(p.sums()->first().model >= 1.0);
  CHECK(p.sums()->first().model < 60.0);  // not b's marks
  CHECK(p.sums()->first().wall >= 61.0);  // a ended only after b's model call
  p.EndChunk(2);                         // b's
  CHECK(p.sums()->later().frames == 2);
  CHECK(p.sums()->later().model >= 60.0);
  CHECK(p.sums()->later().between == 0);  // b started beside a: the host did not wait
  // Fed: from a's last output conversion to b's, which holds b's model call.
  CHECK(p.sums()->first().fed_frames == 0);  // nothing before a
  CHECK(p.sums()->later().fed_frames == 2);
  CHECK(p.sums()->later().fed_period >= 60.0);
  CHECK(p.sums()->later().fed_period < 600.0);
  p.BeginChunk(1);  // c fails: dropped
  model(600000);
  p.AbandonChunk();
  Pass(2000);
  p.BeginChunk(1);  // d
  model(500);
  p.EndChunk(5);
  CHECK(p.sums()->later().chunks == 2);  // b and d, not c
  CHECK(p.sums()->later().frames == 7);
  CHECK(p.sums()->later().model < 600.0);    // c's 600 ms are not in it
  CHECK(p.sums()->later().between >= 2.0);   // from b's end to d's start
  CHECK(p.sums()->later().fed_frames == 2);  // d waited, after a failed chunk: not fed
  CHECK(p.sums()->Line().find("; fed ") != std::string::npos);
  // Ends with nothing open are ignored.
  p.EndChunk(9);
  CHECK(p.sums()->later().frames == 7);
}
