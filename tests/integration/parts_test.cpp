// A job's parts (`framemill run JOB --part I/N`, `framemill stitch JOB`): the same output as one
// machine's run, each part seeking to its first frame, and a part run again resuming from its own
// done-log.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <sys/stat.h>

#include "harness.h"
#include "parts_harness.h"
#include "supervisor/media/decode_seek.h"

using namespace framemill;
using namespace framemill::test;

namespace {

ino_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

TEST_CASE("parts: three parts and a stitch give the one-machine output, each part seeking") {
  const std::string dir = ScratchDir("parts_three");
  const std::string clip = MakePartsClip(dir);
  WritePartsJob(dir, "whole", clip, dir + "/whole.mp4");
  RunResult whole = Framemill(dir, "run whole.json");
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  WritePartsJob(dir, "job", clip, dir + "/out.mp4");
  const std::string parts = dir + "/job.json.parts";
  // Part 2 alone first: it writes the plan, and its decoder starts near frame 32, not at 0.
  RunResult p2 = Framemill(dir, "run job.json --part 2/3", "FRAMEMILL_TEST_DECODER_VERBOSE=1");
  REQUIRE_MESSAGE(p2.exit_code == 0, p2.err);
  CHECK(std::filesystem::exists(parts + "/plan.json"));
  const int64_t first = 32, frames = 32;  // part 2/3: segment 1 (WritePartsJob)
  const int64_t decoded = FramesDecoded(parts + "/part-2-of-3/decoder.log");
  INFO("part 2/3 decoded " << decoded << " frames for its " << frames);
  CHECK(decoded >= frames);
  // At most a GOP (and the seek's margin) before its first frame; a decode from 0 is 64.
  CHECK(decoded - frames <= kPartsClipGop + kSeekMarginFrames);
  CHECK(decoded < first + frames);

  // Run again, it finds its segment done and redoes nothing.
  const std::string segment = parts + "/part-2-of-3/segment_000001.nut";
  const ino_t before = Inode(segment);
  REQUIRE(before != 0);
  RunResult again = Framemill(dir, "run job.json --part 2/3");
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.err.find("resuming: 1 of 1 segments already finished") != std::string::npos);
  CHECK(Inode(segment) == before);

  // The stitch refuses while a part is missing, then joins them all.
  RunResult early = Framemill(dir, "stitch job.json");
  CHECK(early.exit_code != 0);
  CHECK(early.err.find("part 1/3 is not finished") != std::string::npos);
  for (const char* part : {"1/3", "3/3"}) {
    RunResult r = Framemill(dir, std::string("run job.json --part ") + part);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  RunResult stitch = Framemill(dir, "stitch job.json");
  REQUIRE_MESSAGE(stitch.exit_code == 0, stitch.err);
  CHECK_FALSE(std::filesystem::exists(parts));  // removed once the output is in place

  const std::vector<uint64_t> a = FrameHashes(dir + "/whole.mp4", kPartsClipWidth, kPartsClipHeight);
  const std::vector<uint64_t> b = FrameHashes(dir + "/out.mp4", kPartsClipWidth, kPartsClipHeight);
  CHECK(a.size() == static_cast<size_t>(kPartsClipFrames));
  CHECK(a == b);
  CHECK_FALSE(FirstStream(Probe(dir + "/out.mp4"), "audio").is_null());
}

TEST_CASE("parts: a part plan that does not fit is refused before any work") {
  const std::string dir = ScratchDir("parts_refused");
  const std::string clip = MakePartsClip(dir);
  WritePartsJob(dir, "job", clip, dir + "/out.mp4");
  // 4 segments: 5 parts cannot each have one.
  RunResult five = Framemill(dir, "run job.json --part 1/5");
  CHECK(five.exit_code != 0);
  CHECK(five.err.find("at most one part per segment") != std::string::npos);
  RunResult bad = Framemill(dir, "run job.json --part 4/3");
  CHECK(bad.exit_code != 0);
  // A plan written for 3 parts is not silently replaced by one for 2.
  REQUIRE(Framemill(dir, "run job.json --part 1/3").exit_code == 0);
  RunResult other = Framemill(dir, "run job.json --part 1/2");
  CHECK(other.exit_code != 0);
  CHECK(other.err.find("parts plan was made with parts 3") != std::string::npos);
}
