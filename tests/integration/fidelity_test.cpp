// What broadcasters and screen recorders bring, through `identity`: a capture that begins
// mid-stream (an MPEG-2 576i transport stream cut between sequence headers, an H.264 one cut
// before its SPS/PPS, an MPEG-2 one that opens on a keyframe without its sequence header) renders
// the frames that decode, says in result.json how many packets gave none and why, and keeps its
// audio in sync; a variable-rate clip with frames 5.3 ms apart keeps every frame on a
// timestamp of its own, within the output container's time base of the source's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

using namespace framemill::test;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

void MustShell(const std::string& command) {
  RunResult r = Shell(command);
  REQUIRE_MESSAGE(r.exit_code == 0, command << "\n" << r.err);
}

// The presentation times of the video packets of `path` (or of the frames that decode, with
// `decoded`), ascending, seconds.
std::vector<double> VideoTimes(const std::string& path, bool decoded) {
  RunResult r = Shell(
      "ffprobe -v error -select_streams v:0 " +
      std::string(decoded ? "-show_entries frame=best_effort_timestamp_time"
                          : "-show_entries packet=pts_time") +
      " -of csv=p=0 " + Q(path));
  REQUIRE(r.exit_code == 0);
  std::vector<double> times;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line != "N/A" && (std::isdigit(static_cast<unsigned char>(line[0])) ||
                                           line[0] == '-')) {
      times.push_back(std::stod(line));
    }
  }
  std::sort(times.begin(), times.end());
  return times;
}

double StreamStart(const std::string& path, const std::string& type) {
  nlohmann::json s = FirstStream(Probe(path), type);
  REQUIRE(!s.is_null());
  return std::stod(s.value("start_time", "0"));
}

nlohmann::json IdentityJob(const std::string& input, const std::string& output) {
  return {{"input", input},
          {"output", output},
          {"model", ModelPath("identity")},
          {"device", TestDevice()},
          {"workers", 1}};
}

RunResult Identity(const std::string& dir, const std::string& input, const std::string& output,
                   const nlohmann::json& keys = nlohmann::json::object()) {
  nlohmann::json job = IdentityJob(input, output);
  job.update(keys);
  return RunJob(dir, job);
}

// `framemill run --json` on `job`: its exit, stdout (the result) and stderr.
RunResult RunJson(const std::string& dir, const nlohmann::json& job) {
  const std::string path = dir + "/job.json";
  std::ofstream(path) << WithTestDefaults(job).dump(2);
  return WaitJob(StartFramemill(dir, {"run", path, "--json"}, {}, "job"));
}

// The result `framemill run --json` printed, or null.
nlohmann::json ResultOf(const RunResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool HasWarning(const nlohmann::json& result, const std::string& start) {
  for (const nlohmann::json& w : result.value("warnings", nlohmann::json::array())) {
    if (w.is_string() && w.get<std::string>().rfind(start, 0) == 0) return true;
  }
  return false;
}

struct Capture {
  const char* name;
  const char* make;  // ffmpeg options making the whole transport stream (video and audio)
  int skip_packets;  // 188-byte packets cut from its start
};

}  // namespace

TEST_CASE("fidelity: a broadcast capture that begins mid-stream renders the frames that decode") {
  const Capture captures[] = {
      // 576i MPEG-2, long GOP with B-frames, MP2 audio: the cut lands inside the first GOP.
      {"mpeg2_576i",
       "-f lavfi -i testsrc2=size=720x576:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 "
       "-t 4 -c:v mpeg2video -g 25 -bf 2 -b:v 4M -flags +ilme+ildct -top 1 -c:a mp2 -b:a 128k",
       300},
      // H.264 whose SPS/PPS come with each IDR only: the cut loses the first ones.
      {"h264",
       "-f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 "
       "-t 4 -c:v libx264 -preset veryfast -g 50 -bf 2 -c:a aac",
       100},
  };
  for (const Capture& c : captures) {
    SUBCASE(c.name) {
      const std::string dir = ScratchDir(std::string("fidelity_midstream_") + c.name);
      const std::string whole = dir + "/whole.ts", cut = dir + "/cut.ts";
      MustShell("ffmpeg -nostdin -v error -y " + std::string(c.make) + " -f mpegts " + Q(whole));
      MustShell("dd if=" + Q(whole) + " of=" + Q(cut) + " bs=188 skip=" +
                std::to_string(c.skip_packets) + " status=none");
      const std::vector<double> packets = VideoTimes(cut, false);
      const std::vector<double> shown = VideoTimes(cut, true);
      // The clip is what it stands for: packets that give no picture, then pictures.
      REQUIRE(shown.size() + 5 < packets.size());
      REQUIRE(!shown.empty());
      const double source_offset = shown.front() - StreamStart(cut, "audio");

      const std::string out = dir + "/out.mkv";
      RunResult r = RunJson(dir, IdentityJob(cut, out));
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(CountFrames(out) == static_cast<int64_t>(shown.size()));
      const nlohmann::json result = ResultOf(r);
      const std::string skipped = std::to_string(packets.size() - shown.size());
      CHECK(HasWarning(result, "the video's first " + skipped + " packets give no picture"));
      // The result says how many packets were skipped and why.
      CHECK(result["skipped_packets"] ==
            nlohmann::json{{"count", packets.size() - shown.size()},
                           {"reason", "leading packets before the first decodable picture"}});
      CHECK(result["truncated"].is_null());
      // Audio stays in sync: the first picture starts as far after the audio as in the source.
      const double out_offset = StreamStart(out, "video") - StreamStart(out, "audio");
      MESSAGE(c.name << ": " << packets.size() << " packets, " << shown.size()
                     << " pictures; video after audio: source " << source_offset << " s, output "
                     << out_offset << " s");
      CHECK(std::fabs(out_offset - source_offset) < 0.02);  // half a frame at 25 fps
      // And the frames keep their spacing: the last one as far from the first as in the source.
      const std::vector<double> out_times = VideoTimes(out, false);
      REQUIRE(out_times.size() == shown.size());
      CHECK(std::fabs((out_times.back() - out_times.front()) - (shown.back() - shown.front())) <
            0.002);
    }
  }
}

TEST_CASE("fidelity: a variable-rate clip with frames 5.3 ms apart keeps a timestamp per frame") {
  // Variable-rate output is retimed by mkvmerge (a dependency scripts/install-deps.sh installs).
  if (Shell("command -v mkvmerge").exit_code != 0) {
    SkipTest("mkvmerge (mkvtoolnix) is not installed: variable-rate output needs it");
  }
  const std::string dir = ScratchDir("fidelity_vfr_5ms");
  // 63 frames, gaps from 5.3 ms to 1.12 s in a fixed irregular pattern (a screen recording),
  // times in 1/10000 s, two of them at 1.2035 s and 1.2088 s. ffprobe guesses 10000/1 as its
  // nominal rate.
  const double gaps[] = {0.0333, 0.0053, 0.0412, 0.0071, 0.1, 0.0167, 0.0053, 0.25, 0.0333};
  std::vector<double> times;
  double t = 0;
  for (int i = 0; i < 63; ++i) {
    times.push_back(t);
    t += i == 40 ? 1.12 : gaps[i % 9];
  }
  times[24] = 1.2035;  // 5.3 ms apart, between 1.1713 s and 1.4433 s
  times[25] = 1.2088;
  REQUIRE(times[23] < times[24]);
  REQUIRE(times[25] < times[26]);
  std::string expr;
  for (size_t i = 0; i < times.size(); ++i) {
    char term[64];
    std::snprintf(term, sizeof(term), "%seq(N,%zu)*%.4f", i == 0 ? "" : "+", i, times[i]);
    expr += term;
  }
  const std::string src = dir + "/vfr.mp4";
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 63 "
            "-vf \"settb=1/10000,setpts='(" +
            expr +
            ")/TB'\" -fps_mode passthrough -enc_time_base 1/10000 -c:v libx264 -preset veryfast "
            "-video_track_timescale 10000 " +
            Q(src));
  const std::vector<double> in = VideoTimes(src, false);
  REQUIRE(in.size() == times.size());
  for (const char* ext : {"mp4", "mkv"}) {
    SUBCASE(ext) {
      const std::string out = dir + "/out." + ext;
      // The default encoder's B-frames, as people run it.
      RunResult r = Identity(dir, src, out, {{"encoder", {{"preset", "medium"}}}});
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      const std::vector<double> got = VideoTimes(out, false);
      REQUIRE(got.size() == in.size());
      // Matroska as ffmpeg writes it counts milliseconds, MP4 here 10 us.
      const double tick = std::string(ext) == "mkv" ? 0.001 : 0.00001;
      int shared = 0, off = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        if (i > 0 && got[i] <= got[i - 1]) ++shared;
        if (std::fabs((got[i] - got.front()) - (in[i] - in.front())) > tick / 2 + 1e-6) ++off;
      }
      MESSAGE(ext << ": frames on an earlier frame's timestamp " << shared
                  << ", further than half a tick from the source's " << off);
      CHECK(shared == 0);
      CHECK(off == 0);
    }
  }
}

TEST_CASE(
    "fidelity: a 12-bit source with alpha (ProRes 4444) names both losses: alpha dropped, and the "
    "depth the encoder keeps") {
  const std::string dir = ScratchDir("fidelity_alpha");
  const std::string input = dir + "/alpha.mov";
  MustShell("ffmpeg -v error -y -f lavfi -i testsrc=size=160x120:rate=25:duration=1,"
            "format=yuva444p12le -c:v prores_ks -profile:v 4444 " + Q(input));
  REQUIRE(FirstStream(Probe(input), "video").value("pix_fmt", "").rfind("yuva444p", 0) == 0);
  RunResult r = Identity(dir, input, dir + "/out.mp4");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("alpha channel (yuva444p") != std::string::npos);
  CHECK(r.err.find("is dropped") != std::string::npos);
  // libx264 stops at 10 bits: its pixel format is named as a loss.
  CHECK(r.err.find("12-bit 444 source; writing yuv444p10le") != std::string::npos);
  CHECK(FirstStream(Probe(dir + "/out.mp4"), "video").value("pix_fmt", "") == "yuv444p10le");
}

TEST_CASE("fidelity: VP9 with alpha in WebM (alpha_mode 1, pix_fmt without it) names the loss") {
  const std::string dir = ScratchDir("fidelity_vp9_alpha");
  const std::string input = dir + "/alpha.webm";
  RunResult make = Shell("ffmpeg -v error -y -f lavfi -i testsrc=size=160x120:rate=25:duration=1,"
                         "format=yuva420p -c:v libvpx-vp9 -deadline realtime " + Q(input));
  if (make.exit_code != 0) SkipTest("this ffmpeg has no libvpx-vp9 encoder: " + make.err);
  RunResult r = Identity(dir, input, dir + "/out.mp4");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("alpha channel (vp9 alpha, stream tag alpha_mode 1) is dropped") != std::string::npos);
}

TEST_CASE("fidelity: an MPEG-2 capture that opens on a keyframe without its sequence header") {
  // The first picture is an I-frame whose sequence header is gone (its start code made a user
  // data one): the decoder takes the size from the next GOP's header, as a player does, and
  // every picture decodes.
  const std::string dir = ScratchDir("fidelity_midstream_no_sequence_header");
  const std::string ts = dir + "/capture.ts";
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -t 2 "
            "-c:v mpeg2video -g 12 -bf 2 -b:v 2M -f mpegts " + Q(ts));
  MustShell("at=$(LC_ALL=C grep -obUaP '\\x00\\x00\\x01\\xb3' " + Q(ts) +
            " | head -1 | cut -d: -f1) && test -n \"$at\" && printf '\\262' | dd of=" + Q(ts) +
            " bs=1 seek=$((at + 3)) conv=notrunc status=none");
  // The clip is what it stands for: its first packet a keyframe, one sequence header fewer.
  RunResult first = Shell("ffprobe -v error -select_streams v:0 -read_intervals %+#1 "
                          "-show_entries packet=flags -of csv=p=0 " + Q(ts));
  REQUIRE(first.out.rfind("K", 0) == 0);
  const std::vector<double> packets = VideoTimes(ts, false);
  const std::vector<double> shown = VideoTimes(ts, true);
  MESSAGE(packets.size() << " packets, " << shown.size() << " pictures");
  const std::string out = dir + "/out.mkv";
  RunResult r = RunJson(dir, IdentityJob(ts, out));
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(CountFrames(out) == static_cast<int64_t>(shown.size()));
  const nlohmann::json result = ResultOf(r);
  CHECK(result["frames"] == shown.size());
  CHECK(result["skipped_packets"]["count"] == packets.size() - shown.size());
}

TEST_CASE("fidelity: corrupt packets inside a GOP: concealed pictures render, a dropped one is skipped") {
  // An MPEG-2 TS of 50 pictures, damaged two ways. The decoder conceals a picture whose slice
  // data is zeroed (every picture still comes out), but drops one whose picture start code is
  // gone (and the B-pictures that lean on it). Both render as a player shows them: the second's
  // count comes from packets, so its decoder ends short, and the job runs again with every
  // picture decoded first, leaving out those that do not decode, each other frame at its own time.
  const std::string dir = ScratchDir("fidelity_corrupt_inside_gop");
  const std::string ts = dir + "/capture.ts";
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -t 2 "
            "-c:v mpeg2video -g 12 -bf 2 -b:v 2M -f mpegts " + Q(ts));
  const std::string concealed = dir + "/concealed.ts", dropped = dir + "/dropped.ts";
  // The payload of the TS packet in the middle of the file (inside a picture) zeroed.
  MustShell("cp " + Q(ts) + " " + Q(concealed) + " && k=$(( $(stat -c %s " + Q(ts) +
            ") / 188 / 2 )) && dd if=/dev/zero of=" + Q(concealed) +
            " bs=1 seek=$((k * 188 + 4)) count=184 conv=notrunc status=none");
  // The 20th picture start code (00 00 01 00) made 00 00 00 00.
  MustShell("cp " + Q(ts) + " " + Q(dropped) +
            " && at=$(LC_ALL=C grep -obUaP '\\x00\\x00\\x01\\x00' " + Q(ts) +
            " | sed -n 20p | cut -d: -f1) && test -n \"$at\" && printf '\\000' | dd of=" +
            Q(dropped) + " bs=1 seek=$((at + 2)) conv=notrunc status=none");
  SUBCASE("concealed") {
    const size_t shown = VideoTimes(concealed, true).size();
    REQUIRE(shown == VideoTimes(concealed, false).size());
    const std::string out = dir + "/concealed.mkv";
    RunResult r = RunJson(dir, IdentityJob(concealed, out));
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(CountFrames(out) == static_cast<int64_t>(shown));
    CHECK(ResultOf(r)["skipped_packets"]["count"] == 0);
  }
  SUBCASE("dropped") {
    // The frames after the gap keep their times: variable-rate output, retimed by mkvmerge.
    if (Shell("command -v mkvmerge").exit_code != 0) {
      SkipTest("mkvmerge (mkvtoolnix) is not installed: variable-rate output needs it");
    }
    const std::vector<double> packets = VideoTimes(dropped, false);
    const std::vector<double> shown = VideoTimes(dropped, true);
    REQUIRE(shown.size() < packets.size());
    MESSAGE(packets.size() << " packets, " << shown.size() << " pictures");
    const std::string out = dir + "/dropped.mkv";
    RunResult r = RunJson(dir, IdentityJob(dropped, out));
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    // The first run ended short and said so; the second decoded every picture first.
    CHECK(r.err.find("decoding ended after " + std::to_string(shown.size()) + " of " +
                     std::to_string(packets.size()) + " frames") != std::string::npos);
    CHECK(r.err.find("decoding every picture of the input") != std::string::npos);
    const nlohmann::json result = ResultOf(r);
    CHECK(result["frames"] == shown.size());
    CHECK(result["skipped_packets"]["count"] == packets.size() - shown.size());
    CHECK(result["skipped_packets"]["reason"] == "damaged pictures that do not decode");
    CHECK(HasWarning(result, "pictures inside the video that do not decode (damaged): " +
                                 std::to_string(packets.size() - shown.size()) + ";"));
    // Every picture that decodes, each at its own time (Matroska counts milliseconds).
    const std::vector<double> got = VideoTimes(out, false);
    REQUIRE(got.size() == shown.size());
    int off = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::fabs((got[i] - got.front()) - (shown[i] - shown.front())) > 0.0005 + 1e-6) ++off;
    }
    CHECK(off == 0);
  }
}
