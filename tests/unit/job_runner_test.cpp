// The decisions RunJob takes as pure functions (supervisor/job/): the free-space estimate, the
// warm-pool key and choice, and the colour conversion a job uses.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/job/color_choice.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/warm_key.h"

using framemill::CheckSpace;
using framemill::ChooseColorConversion;
using framemill::ChooseWarm;
using framemill::ColorConversion;
using framemill::EstimateSpace;
using framemill::FileIdentity;
using framemill::IdentifyFile;
using framemill::JobSettings;
using framemill::LogDirKey;
using framemill::Precision;
using framemill::SpaceFree;
using framemill::SpaceNeeded;
using framemill::StatusCode;
using framemill::WarmChoice;
using framemill::WarmKey;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

SpaceFree Free(int64_t scratch, int64_t output) {
  SpaceFree f;
  f.scratch_dir = "/scratch";
  f.scratch = scratch;
  f.output_dir = "/out";
  f.output = output;
  return f;
}

FileIdentity Model() {
  FileIdentity m;
  m.real_path = "/models/x.pt";
  m.dev = 2049;
  m.ino = 77;
  m.size = 1000;
  m.mtime_s = 1700000000;
  m.mtime_ns = 5;
  return m;
}

}  // namespace

TEST_CASE("free space: the estimate scales the input by the pixel count, with a 50% margin") {
  // 100 MiB in, twice the width and height out: four times the pixels.
  SpaceNeeded n = EstimateSpace(100 * kMiB, 4 * 640 * 480, 640 * 480, 0, 10);
  CHECK(n.output == 600 * kMiB);
  CHECK(n.segments == 600 * kMiB);
  // Same size out: 1.5 times the input.
  n = EstimateSpace(100 * kMiB, 640 * 480, 640 * 480, 0, 1);
  CHECK(n.output == 150 * kMiB);
}

TEST_CASE("free space: finished segments need no room again, the output still does") {
  SpaceNeeded n = EstimateSpace(100 * kMiB, 640 * 480, 640 * 480, 6, 10);
  CHECK(n.segments == 60 * kMiB);
  CHECK(n.output == 150 * kMiB);
  n = EstimateSpace(100 * kMiB, 640 * 480, 640 * 480, 10, 10);
  CHECK(n.segments == 0);
  // No segments and no pixels do not divide by zero.
  n = EstimateSpace(100 * kMiB, 640 * 480, 0, 0, 0);
  CHECK(n.output > 0);
}

TEST_CASE("free space: one file system holds the segments and the output together") {
  SpaceNeeded need{100 * kMiB, 150 * kMiB};
  CHECK(CheckSpace(need, Free(250 * kMiB, 250 * kMiB)).ok());
  framemill::Status s = CheckSpace(need, Free(249 * kMiB, 249 * kMiB));
  CHECK(s.code() == StatusCode::kNoSpace);
  CHECK(s.message() == "/out: about 250 MiB needed, 249 MiB free");
}

TEST_CASE("free space: two file systems each hold their own part") {
  SpaceNeeded need{100 * kMiB, 150 * kMiB};
  CHECK(CheckSpace(need, Free(100 * kMiB, 150 * kMiB + 1)).ok());
  framemill::Status s = CheckSpace(need, Free(99 * kMiB, 1000 * kMiB));
  CHECK(s.code() == StatusCode::kNoSpace);
  CHECK(s.message() == "/scratch: about 100 MiB needed, 99 MiB free");
  s = CheckSpace(need, Free(1000 * kMiB, 149 * kMiB));
  CHECK(s.code() == StatusCode::kNoSpace);
  CHECK(s.message() == "/out: about 150 MiB needed, 149 MiB free");
}

TEST_CASE("free space: an unknown free count is not checked") {
  SpaceNeeded need{100 * kMiB, 150 * kMiB};
  CHECK(CheckSpace(need, Free(-1, -1)).ok());
  CHECK(CheckSpace(need, Free(-1, 150 * kMiB)).ok());
  CHECK(CheckSpace(need, Free(100 * kMiB, -1)).ok());
  CHECK_FALSE(CheckSpace(need, Free(-1, 149 * kMiB)).ok());
}

TEST_CASE("warm pool: the same model and settings give the same key") {
  JobSettings s;
  CHECK(WarmKey(1000, Model(), s, "logs") == WarmKey(1000, Model(), s, "logs"));
  // Settings the workers do not depend on leave the key alone.
  JobSettings other = s;
  other.chunk_frames = 7;
  other.encoders = 3;
  other.color_conversion = ColorConversion::kFast;
  CHECK(WarmKey(1000, Model(), other, "logs") == WarmKey(1000, Model(), s, "logs"));
}

TEST_CASE("warm pool: a changed model file, device, precision, autotuning, worker count or GPUs changes it") {
  JobSettings s;
  const std::string key = WarmKey(1000, Model(), s, "logs");
  FileIdentity m = Model();
  m.mtime_ns += 1;
  CHECK(WarmKey(1000, m, s, "logs") != key);
  m = Model();
  m.size += 1;
  CHECK(WarmKey(1000, m, s, "logs") != key);
  m = Model();
  m.ino += 1;
  CHECK(WarmKey(1000, m, s, "logs") != key);
  m = Model();
  m.real_path = "/models/y.pt";
  CHECK(WarmKey(1000, m, s, "logs") != key);
  JobSettings t = s;
  t.device = *framemill::ParseDevice("cpu");
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  t = s;
  t.precision = Precision::kBf16;
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  t = s;
  t.model_optimization = framemill::ModelOptimization::kOff;
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  t = s;
  t.cudnn_autotune = true;
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  t = s;
  t.workers = s.workers + 1;
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  t = s;
  t.gpus = {0};
  CHECK(WarmKey(1000, Model(), t, "logs") != key);
  CHECK(WarmKey(1000, Model(), s, "other logs") != key);
}

TEST_CASE("warm pool: another submitter's job never gets the workers, even with the same model") {
  // The same model file, settings and log folder: only who submitted the job differs.
  JobSettings s;
  const std::string alice = WarmKey(1001, Model(), s, "/var/log/fm");
  const std::string bob = WarmKey(1002, Model(), s, "/var/log/fm");
  CHECK(alice != bob);
  CHECK(ChooseWarm(true, alice, bob) == WarmChoice::kReplace);
  CHECK(ChooseWarm(true, alice, WarmKey(1001, Model(), s, "/var/log/fm")) == WarmChoice::kReuse);
  // A submitter the caller does not know (UINT32_MAX: `framemill run`) is not anybody's.
  CHECK(WarmKey(UINT32_MAX, Model(), s, "/var/log/fm") != alice);
  // One uid cannot pass for another by a prefix ("uid 1" against "uid 10...").
  CHECK(WarmKey(1, Model(), s, "/var/log/fm").rfind("uid 1|", 0) == 0);
}

TEST_CASE("warm pool: workers logging into a job's scratch directory fit only that job") {
  FileIdentity a, b;
  a.dev = b.dev = 5;
  a.ino = 10;
  b.ino = 11;
  CHECK(LogDirKey("", a) != LogDirKey("", b));
  CHECK(LogDirKey("", a) == LogDirKey("", a));
  // A log directory of the caller's is the same for every job.
  CHECK(LogDirKey("/var/log/fm", a) == LogDirKey("/var/log/fm", b));
}

TEST_CASE("warm pool: reused when the keys match, replaced when not, none offered starts fresh") {
  CHECK(ChooseWarm(false, "", "k") == WarmChoice::kStartFresh);
  CHECK(ChooseWarm(true, "k", "k") == WarmChoice::kReuse);
  CHECK(ChooseWarm(true, "k", "j") == WarmChoice::kReplace);
  CHECK(std::string(Name(WarmChoice::kReuse)) == "reuse");
}

TEST_CASE("warm pool: a file's identity follows its changes") {
  char path[] = "/tmp/framemill-warm-key-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  FileIdentity before = IdentifyFile(fd);
  CHECK(before.real_path == path);
  CHECK(before.size == 0);
  REQUIRE(::write(fd, "abc", 3) == 3);
  FileIdentity after = IdentifyFile(fd);
  CHECK(after.size == 3);
  CHECK(after.ino == before.ino);
  CHECK(WarmKey(1000, after, JobSettings(), "") != WarmKey(1000, before, JobSettings(), ""));
  ::close(fd);
  ::unlink(path);
}

TEST_CASE("colour conversion: auto is device on a GPU with 8-bit 4:2:0, accurate otherwise") {
  for (bool round_trip : {false, true}) {
    CHECK(ChooseColorConversion(ColorConversion::kAuto, "cuda:0", "yuv420p", round_trip,
                                nullptr) == ColorConversion::kDevice);
    CHECK(ChooseColorConversion(ColorConversion::kAuto, "cuda:1", "yuvj420p", round_trip,
                                nullptr) == ColorConversion::kDevice);
    CHECK(ChooseColorConversion(ColorConversion::kAuto, "cuda:0", "yuv420p10le", round_trip,
                                nullptr) == ColorConversion::kAccurate);
    CHECK(ChooseColorConversion(ColorConversion::kAuto, "cuda:0", "yuv444p", round_trip,
                                nullptr) == ColorConversion::kAccurate);
  }
}

TEST_CASE("colour conversion: auto on a CPU is device only where the worker converts both ways") {
  // Through 8-bit RGB a clean 720p source lost 1.2 dB of U, an interlaced one 2 dB of each
  // chroma plane; the float path both ways matches ffmpeg's direct re-encode.
  CHECK(ChooseColorConversion(ColorConversion::kAuto, "cpu", "yuv420p", true, nullptr) ==
        ColorConversion::kDevice);
  // In only (full range, odd sizes, faces, another output pix_fmt) it gains nothing and costs
  // the worker more time and memory than swscale: the RGB path stays.
  CHECK(ChooseColorConversion(ColorConversion::kAuto, "cpu", "yuv420p", false, nullptr) ==
        ColorConversion::kAccurate);
  CHECK(ChooseColorConversion(ColorConversion::kAuto, "cpu", "yuvj420p", false, nullptr) ==
        ColorConversion::kAccurate);
  // Other sources never reach the worker as YUV.
  for (const char* fmt : {"yuv420p10le", "yuv422p", "yuv444p", "rgb24", ""}) {
    CHECK(ChooseColorConversion(ColorConversion::kAuto, "cpu", fmt, true, nullptr) ==
          ColorConversion::kAccurate);
  }
}

TEST_CASE("colour conversion: device on another source is fast, with a warning") {
  std::string warning;
  CHECK(ChooseColorConversion(ColorConversion::kDevice, "cuda:0", "yuv422p", true, &warning) ==
        ColorConversion::kFast);
  CHECK(warning ==
        "color_conversion device takes 8-bit 4:2:0 video and this is yuv422p; ffmpeg converts "
        "it to RGB (fast) instead");
  warning.clear();
  CHECK(ChooseColorConversion(ColorConversion::kDevice, "cpu", "", false, &warning) ==
        ColorConversion::kFast);
  CHECK(warning.find("of an unknown pixel format") != std::string::npos);
  // On 8-bit 4:2:0 it stays device, on a CPU worker too (the worker converts there), whichever
  // way the output goes back.
  for (bool round_trip : {false, true}) {
    warning.clear();
    CHECK(ChooseColorConversion(ColorConversion::kDevice, "cpu", "yuv420p", round_trip,
                                &warning) == ColorConversion::kDevice);
    CHECK(warning.empty());
  }
}

TEST_CASE("colour conversion: accurate and fast stay as set") {
  for (const char* dev : {"cpu", "cuda:0"}) {
    for (const char* fmt : {"yuv420p", "yuv420p10le", "rgb24"}) {
      for (bool round_trip : {false, true}) {
        CHECK(ChooseColorConversion(ColorConversion::kAccurate, dev, fmt, round_trip, nullptr) ==
              ColorConversion::kAccurate);
        CHECK(ChooseColorConversion(ColorConversion::kFast, dev, fmt, round_trip, nullptr) ==
              ColorConversion::kFast);
      }
    }
  }
}
