// The decoder's seek (supervisor/media/decode_seek.h): started at frame k, it delivers exactly the
// frames a sequential decode delivers from k on, on the real clips and on the corpus's kinds of
// file where seeking is hard (variable rate, open GOP, B-frames, an MPEG-TS start offset, VP8/VP9
// alt-ref frames, a timecode track).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <fcntl.h>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "corpus.h"
#include "common/checked_file.h"
#include "harness.h"
#include "parts_harness.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/media/source_intake.h"

using namespace framemill;
using namespace framemill::test;

namespace {

// Hashes of the frames FrameReader delivers for `seek` (all of them when first_frame is 0).
std::vector<uint64_t> ReadHashes(const SourceFile& source, const MediaInfo& media,
                                 const DecodeSeek& seek, const std::string& log) {
  const VideoStreamInfo& v = media.video;
  Result<std::unique_ptr<FrameReader>> reader =
      FrameReader::Start("ffmpeg", source, v, log, FrameFormat::kRgb24, {}, true, seek);
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  std::vector<uint8_t> frame(static_cast<size_t>(v.display_width) * v.display_height * 3);
  std::vector<uint64_t> hashes;
  for (;;) {
    Result<bool> got = (*reader)->Read(frame.data());
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    if (!*got) break;
    hashes.push_back(HashBytes(frame.data(), frame.size()));
  }
  Status finished = (*reader)->Finish();
  CHECK_MESSAGE(finished.ok(), finished.ToString());
  return hashes;
}

// Seeks `path` to about 6 frames spread over it and to its last, and compares 3 frames from each
// with the sequential decode.
void CheckSeeks(const std::string& path, const std::string& dir) {
  INFO(path);
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.valid());
  Result<std::vector<std::string>> restrictions = InputRestrictions("ffprobe", PlaylistInputs::kRefuse);
  REQUIRE(restrictions.ok());
  const SourceFile source{fd.get(), path, *restrictions};
  Result<MediaInfo> media = ProbeMedia("ffprobe", source, /*frame_times=*/true);
  REQUIRE_MESSAGE(media.ok(), media.status().ToString());
  const int64_t n = media->video.frame_count;
  const std::vector<uint64_t> all = ReadHashes(source, *media, DecodeSeek(), dir + "/all.log");
  REQUIRE(static_cast<int64_t>(all.size()) == n);
  std::set<int64_t> starts;
  const int64_t step = std::max<int64_t>(1, n / 6);  // about 6 starts a clip, and the last frame
  for (int64_t k = 1; k < n; k += step) starts.insert(k);
  starts.insert(n - 1);
  int seeking = 0;
  for (int64_t k : starts) {
    const DecodeSeek seek = SeekFor(media->video, media->start_time, k, 3);
    seeking += seek.seeks() ? 1 : 0;
    const std::vector<uint64_t> got = ReadHashes(source, *media, seek, dir + "/seek.log");
    const int64_t from = seek.seeks() ? k : 0;
    const std::vector<uint64_t> want(all.begin() + from,
                                     all.begin() + std::min<int64_t>(n, from + 3));
    CHECK_MESSAGE(got == want, "frames from " << k << " (seek " << seek.input_seek_s << " s, trim "
                                              << seek.trim_start_s << " s)");
  }
  CHECK(seeking > 0);  // the clips all carry timestamps: every start past the first seeks
}

}  // namespace

TEST_CASE("seek: a decoder started at frame k gives frame k on, on the real clips") {
  const std::string dir = ScratchDir("seek_real");
  // d20.mp4 is left out: one keyframe, like d0.mp4, which has B-frames and an edit list besides.
  for (const char* clip : {"d0.mp4", "friday.mp4", "flower.webm"}) {
    CheckSeeks(TestClip(clip), dir);
  }
}

TEST_CASE("seek: frame-exact on variable-rate, open-GOP, MPEG-TS, VP9 and timecode files") {
  const std::string dir = ScratchDir("seek_corpus");
  for (const char* name :
       {"variable_frame_rate", "open_gop", "mpeg2_ts_offset", "vp9_webm", "timecode_mov"}) {
    const CorpusEntry& e = CorpusEntryNamed(name);
    const std::string sub = dir + "/" + name;
    Shell("mkdir -p " + ShellQuote(sub));
    for (const std::string& command : e.commands) {
      RunResult r = Shell("cd " + ShellQuote(sub) + " && " + command);
      REQUIRE_MESSAGE(r.exit_code == 0, command << ": " << r.err);
    }
    CheckSeeks(sub + "/" + e.source, sub);
  }
  // Keyframes every 6 frames, open GOPs and B-frames at a variable rate: seeks land in the
  // middle of the file, on a keyframe whose leading frames belong to the GOP before.
  const std::string vfr = dir + "/vfr_open_gop.mkv";
  RunResult r = Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=160x120:r=25:d=2 "
                      "-vf 'setpts=if(lt(N\\,20)\\,N/25\\,0.8+(N-20)/12)/TB' -fps_mode vfr "
                      "-c:v libx264 -x264-params open-gop=1:keyint=6:min-keyint=6:scenecut=0:"
                      "bframes=3 " + ShellQuote(vfr));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CheckSeeks(vfr, dir);
}
