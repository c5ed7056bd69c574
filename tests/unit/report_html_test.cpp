// The job report's renderer (a pure function) and the stills' pixel conversion.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "supervisor/report/report_file.h"
#include "supervisor/report/report_html.h"
#include "supervisor/report/report_stills.h"

using namespace framemill;

namespace {

constexpr uint64_t kMiB = 1 << 20;
using K = TimelineEventKind;

TimelineRecord Event(double t, int worker, uint64_t gen, TimelineEventKind event, uint64_t frames,
                     uint64_t rss_mb, uint64_t gpu_mb = 0, const std::string& reason = "") {
  TimelineRecord r;
  r.t_s = t;
  r.event.worker = worker;
  r.event.generation = gen;
  r.event.kind = event;
  r.event.frames = frames;
  r.event.rss_bytes = rss_mb * kMiB;
  r.event.gpu_reserved_bytes = gpu_mb * kMiB;
  r.event.gpu_allocated_bytes = gpu_mb * kMiB / 2;
  r.event.reason = reason;
  return r;
}

// A job of two worker slots: slot 0 is recycled (gen 1 -> 3), slot 1 crashes (gen 2 -> 4) and
// its replacement is killed.
ReportData Sample(uint64_t gpu_mb) {
  ReportData d;
  d.title = "out.mp4";
  d.outcome = "done";
  d.facts = {{"input", "in.mp4"}};
  d.timeline = {Event(0.1, 0, 1, K::kStart, 0, 0),
                Event(0.2, 1, 2, K::kStart, 0, 0),
                Event(1.0, 0, 1, K::kReady, 0, 300, gpu_mb),
                Event(1.1, 1, 2, K::kReady, 0, 300, gpu_mb),
                Event(2.0, 0, 1, K::kChunk, 32, 350, gpu_mb),
                Event(2.1, 1, 2, K::kChunk, 32, 350, gpu_mb),
                Event(3.0, 0, 1, K::kChunk, 64, 420, gpu_mb),
                Event(3.0, 0, 1, K::kRecycle, 64, 420, gpu_mb, "rss 420 MiB >= 400 MiB"),
                Event(3.5, 1, 2, K::kCrash, 32, 360, gpu_mb, "signal 9 <script>alert(1)</script>"),
                Event(3.6, 0, 3, K::kStart, 0, 0),
                Event(3.7, 1, 4, K::kStart, 0, 0),
                Event(4.0, 0, 1, K::kStop, 64, 420, gpu_mb, "rss"),
                Event(4.5, 0, 3, K::kChunk, 32, 330, gpu_mb),
                Event(5.0, 1, 4, K::kKill, 0, 900, gpu_mb, "rss over \xff\xfe hard limit")};
  d.stages.pipeline_s = 4;
  d.stages.decode_s = 1;
  d.stages.decode_wait_s = 2;
  d.stages.workers = 2;
  d.stages.workers_busy_s = 6;
  d.stages.encode_s = 1;
  d.stages.encode_wait_s = 3;
  d.stages.tail_s = 0.5;
  d.stills_note = "this build has no OpenCV";
  return d;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

TEST_CASE("report: one SVG per plot, each with its plot area and a line per worker slot") {
  const std::string html = RenderReportHtml(Sample(500));
  CHECK(Count(html, "<svg class=\"plot ") == 4);
  for (const char* plot : {"plot rss", "plot gpu", "plot throughput", "plot stages"}) {
    INFO(plot);
    CHECK(html.find(plot) != std::string::npos);
  }
  for (const char* bg : {kRssPlotColor, kGpuPlotColor, kThroughputPlotColor, kStagesPlotColor}) {
    CHECK(html.find(std::string("fill=\"") + bg + "\"") != std::string::npos);
  }
  // RSS: one line per slot (generations joined); GPU: reserved and allocated per slot (the
  // process figure is all zero and left out); throughput: one.
  CHECK(Count(html, "<polyline class=\"series\"") == 2 + 4 + 1);
  CHECK(html.find(kWorkerColors[0]) != std::string::npos);
  CHECK(html.find(kWorkerColors[1]) != std::string::npos);
  CHECK(html.find("resident set (MiB)") != std::string::npos);
  CHECK(html.find("GPU memory (MiB)") != std::string::npos);
  CHECK(html.find("frames per second") != std::string::npos);
  CHECK(html.find("stills: this build has no OpenCV") != std::string::npos);
  CHECK(html.find("pipeline 4.00 s (of it 0.50 s after the workers' last chunk") !=
        std::string::npos);
}

TEST_CASE("report: recycle, crash and kill are marked on both memory plots, with a legend") {
  const std::string html = RenderReportHtml(Sample(500));
  // One marker each per memory plot, plus one legend sample per plot.
  CHECK(Count(html, "class=\"ev-recycle\"") == 4);
  CHECK(Count(html, "class=\"ev-crash\"") == 4);
  CHECK(Count(html, "class=\"ev-kill\"") == 4);
  CHECK(html.find(kRecycleColor) != std::string::npos);
  CHECK(html.find(kCrashColor) != std::string::npos);
}

TEST_CASE("report: a CPU job has no GPU panel, one sentence instead") {
  const std::string html = RenderReportHtml(Sample(0));
  CHECK(html.find("no GPU figures: the workers ran on the CPU") != std::string::npos);
  CHECK(html.find("plot gpu") == std::string::npos);
  CHECK(html.find(kGpuPlotColor) == std::string::npos);
  CHECK(Count(html, "<svg class=\"plot ") == 3);
  CHECK(Count(html, "<polyline class=\"series\"") == 2 + 1);
}

TEST_CASE("report: no script, no remote URL, and every text escaped and valid UTF-8") {
  ReportData d = Sample(500);
  d.title = "a<b>&\"c\xc3\x28.mp4";
  d.facts.push_back({"warning", "<img src=http://example.com/x onerror=alert(1)>"});
  d.outcome = "failed: \xed\xa0\x80 surrogate, \xc0\xaf overlong";
  d.failed = true;
  const std::string html = RenderReportHtml(d);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<img src=http") == std::string::npos);
  CHECK(html.find("&lt;img src=http://example.com") != std::string::npos);
  // The only URL is the one the text mentions, escaped: no attribute (the page quotes every
  // attribute value) and no style points anywhere.
  CHECK(!std::regex_search(html, std::regex("(src|href|xmlns)=\"(https?:|//)")));
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(Count(html, "http:") + Count(html, "https:") == 1);
  CHECK(html.find("a&lt;b&gt;&amp;&quot;c\xEF\xBF\xBD(.mp4") != std::string::npos);
  CHECK(html.find("rss over \xEF\xBF\xBD\xEF\xBF\xBD hard limit") != std::string::npos);
  CHECK(ValidUtf8(html));
  CHECK(html.find("class=\"outcome failed\"") != std::string::npos);
}

TEST_CASE("report: stills are embedded as data: URIs, side by side per frame") {
  ReportData d = Sample(500);
  d.stills = {{0, "data:image/jpeg;base64,AAAA", "data:image/jpeg;base64,BBBB", ""},
              {96, "data:image/jpeg;base64,CCCC", "data:image/jpeg;base64,DDDD", ""}};
  const std::string html = RenderReportHtml(d);
  CHECK(Count(html, "<img ") == 4);
  CHECK(html.find("src=\"data:image/jpeg;base64,DDDD\"") != std::string::npos);
  CHECK(html.find("frame 96, as the model gave it back") != std::string::npos);
  CHECK(html.find("stills: ") == std::string::npos);
}

TEST_CASE("report: throughput spreads each chunk's frames over the time its worker spent on it") {
  // Worker 0 gen 1 finishes 32 frames at 0.5 s (no earlier event: counted at 0.5 s) and 32 more
  // at 1.5 s (spread over 0.5 to 1.5 s); its replacement (gen 3) counts from 0 again: 32 at
  // 1.7 s. Worker 1 is ready at 1.0 s and finishes 64 frames at 1.9 s (spread over 1.0 to 1.9 s).
  std::vector<TimelineRecord> t = {
      Event(0.5, 0, 1, K::kChunk, 32, 1), Event(1.0, 1, 2, K::kReady, 0, 1),
      Event(1.5, 0, 1, K::kChunk, 64, 1), Event(1.7, 0, 3, K::kChunk, 32, 1),
      Event(1.9, 1, 2, K::kChunk, 64, 1), Event(3.0, 0, 1, K::kStop, 64, 1)};
  std::vector<std::pair<double, double>> fps = ThroughputSeries(t, 1.0);
  REQUIRE(fps.size() == 3);
  CHECK(fps[0].first == doctest::Approx(0.5));
  CHECK(fps[0].second == doctest::Approx(32 + 16));
  CHECK(fps[1].second == doctest::Approx(16 + 32 + 64));
  CHECK(fps[2].second == doctest::Approx(0));
  CHECK(ThroughputSeries({Event(1, 0, 1, K::kStart, 0, 0)}, 1.0).empty());
}

// A steady night in small: 3 workers, each finishing a chunk of 32 frames every 0.3 s (0.35 s
// for worker 2), out of phase, for an hour.
std::vector<TimelineRecord> SteadyJob() {
  std::vector<TimelineRecord> t;
  const double interval[3] = {0.3, 0.3, 0.35};
  uint64_t frames[3] = {0, 0, 0};
  double next[3] = {2.0 + 0.3, 2.1 + 0.3, 2.2 + 0.35};
  for (int w = 0; w < 3; ++w) t.push_back(Event(2.0 + 0.1 * w, w, w + 1, K::kReady, 0, 500, 0));
  for (;;) {
    const int w = static_cast<int>(std::min_element(next, next + 3) - next);
    if (next[w] > 3600) break;
    frames[w] += 32;
    t.push_back(Event(next[w], w, w + 1, K::kChunk, frames[w], 500 + frames[w] % 7, 0));
    next[w] += interval[w];
  }
  return t;
}

TEST_CASE("report: a steady job's throughput is flat, over windows that hold several chunks") {
  const std::vector<TimelineRecord> t = SteadyJob();
  const double window = ThroughputWindow(t);
  CHECK(window >= 4 * 0.35);  // several chunks of the slowest worker
  CHECK(window <= 3600 / 50.0);
  std::vector<std::pair<double, double>> fps = ThroughputSeries(t, window);
  REQUIRE(fps.size() >= 50);
  const double expect = 32 / 0.3 * 2 + 32 / 0.35;
  // The first window holds the workers' start (nothing before 2 s): every later one is flat.
  for (size_t i = 1; i < fps.size(); ++i) {
    INFO("window " << i << " at " << fps[i].first << " s: " << fps[i].second << " fps");
    CHECK(fps[i].second == doctest::Approx(expect).epsilon(0.10));
  }
  // Narrow windows, far narrower than a chunk, are still flat: no 0 <-> peak sawtooth.
  std::vector<std::pair<double, double>> fine = ThroughputSeries(t, 0.1);
  size_t off = 0;
  for (size_t i = 100; i + 10 < fine.size(); ++i)
    off += std::abs(fine[i].second / expect - 1) > 0.1;
  CHECK(off == 0);
}

TEST_CASE("report: memory axes start near the data's minimum and say their range") {
  ReportData d = Sample(0);
  // RSS between 1600 and 1700 MiB once measured; the start events' 0 measured nothing.
  d.timeline = {Event(0.1, 0, 1, K::kStart, 0, 0)};
  for (int i = 1; i <= 20; ++i) {
    d.timeline.push_back(Event(i, 0, 1, K::kChunk, 32 * i, 1600 + 5 * i));
  }
  const std::string html = RenderReportHtml(d);
  std::smatch m;
  const std::string rss = html.substr(html.find("<svg class=\"plot rss\""));
  REQUIRE(std::regex_search(rss, m, std::regex("class=\"y-tick\"[^>]*>([0-9.]+)<")));
  const double bottom = std::stod(m[1]);
  CHECK(bottom >= 1500);
  CHECK(bottom <= 1605);
  CHECK(html.find("The y axis runs from " + m[1].str()) != std::string::npos);
  CHECK(html.find("not from 0") != std::string::npos);
  // The throughput axis is a rate: from 0.
  const std::string fps = html.substr(html.find("<svg class=\"plot throughput\""));
  REQUIRE(std::regex_search(fps, m, std::regex("class=\"y-tick\"[^>]*>([0-9.]+)<")));
  CHECK(std::stod(m[1]) == 0);
}

TEST_CASE("report: a slot with too few samples is drawn as points and says so, not as a line") {
  ReportData d = Sample(0);
  d.timeline = {Event(0.1, 0, 1, K::kStart, 0, 0), Event(1.0, 0, 1, K::kReady, 0, 200),
                Event(4.0, 0, 1, K::kChunk, 64, 1630)};
  const std::string html = RenderReportHtml(d);
  const std::string rss =
      html.substr(html.find("<svg class=\"plot rss\""),
                  html.find("plot throughput") - html.find("<svg class=\"plot rss\""));
  CHECK(rss.find("<polyline") == std::string::npos);
  CHECK(Count(rss, "<circle class=\"sample\"") == 2);
  CHECK(rss.find("Too few samples for a line (worker 0: 2 samples)") != std::string::npos);
}

TEST_CASE("report: the stages count the worker slots that started, not those asked for") {
  ReportData d = Sample(500);
  d.stages.workers = 2;
  d.timeline = {Event(0.1, 0, 1, K::kStart, 0, 0), Event(1.0, 0, 1, K::kReady, 0, 200),
                Event(2.0, 0, 1, K::kChunk, 32, 300), Event(3.0, 0, 1, K::kChunk, 64, 300)};
  const std::string html = RenderReportHtml(d);
  CHECK(html.find("workers (1)") != std::string::npos);
  CHECK(html.find("workers (2)") == std::string::npos);
  CHECK(RenderReportHtml(Sample(500)).find("workers (2)") != std::string::npos);
  // One worker wanted, recycled: its standby takes slot 1 while slot 0 leaves. Still one.
  d.stages.workers = 1;
  d.timeline.push_back(Event(3.1, 1, 2, K::kStart, 0, 0, 0, "standby for slot 0"));
  d.timeline.push_back(Event(3.5, 1, 2, K::kChunk, 32, 300));
  const std::string standby = RenderReportHtml(d);
  CHECK(standby.find("workers (1)") != std::string::npos);
  CHECK(standby.find("workers (2)") == std::string::npos);
}

TEST_CASE("report file: a resumed job says what an earlier run kept, and its speed is this run's") {
  JobSpec job;
  job.input = "in.mp4";
  job.output = "out.mp4";
  JobReport r;
  r.frames = 1000;
  r.seconds = 10;
  r.segments = 10;
  r.segments_resumed = 6;
  r.frames_resumed = 600;
  r.timeline = "/spool/active/j1/timeline.jsonl";
  auto fact = [](const ReportData& d, const std::string& label) {
    for (const auto& [l, v] : d.facts) {
      if (l == label) return v;
    }
    return std::string("(none)");
  };
  ReportData d = MakeReportData(job, r, Status::Ok(), {}, {}, "", "/spool/done/j1/timeline.jsonl");
  CHECK(d.outcome.find("resumed") != std::string::npos);
  CHECK(d.outcome.find("400 of them rendered by this run") != std::string::npos);
  CHECK(fact(d, "resumed") ==
        "6 segments (600 frames) kept from an earlier run; this run rendered 400 frames");
  CHECK(fact(d, "speed").find("40.0 frames/s") == 0);  // 400 frames in 10 s, not 1000
  CHECK(RenderReportHtml(d).find("resumed") != std::string::npos);
  // The timeline is named where it stays, not in active/ (gone once the job is filed).
  CHECK(fact(d, "memory timeline") == "/spool/done/j1/timeline.jsonl");
  CHECK(RenderReportHtml(d).find("/active/") == std::string::npos);

  r.segments_resumed = r.frames_resumed = 0;
  ReportData fresh = MakeReportData(job, r, Status::Ok(), {}, {}, "");
  CHECK(fact(fresh, "resumed") == "(none)");
  CHECK(fact(fresh, "speed").find("100.0 frames/s") == 0);
  CHECK(fact(fresh, "memory timeline") == r.timeline);  // `framemill run`: beside the output
}

TEST_CASE("report stills: arena frames become 8-bit RGB (rgb48 scaled, yuv420p by its matrix)") {
  const uint8_t rgb48[6] = {0xff, 0xff, 0x00, 0x80, 0x00, 0x00};  // 65535, 32768, 0
  std::vector<uint8_t> a = FrameToRgb24(rgb48, FrameFormat::kRgb48, 1, 1, YuvMatrix::kBt601, false);
  CHECK(a == std::vector<uint8_t>{255, 128, 0});
  // 2x2 limited-range yuv420p: Y 16 (black) and 235 (white), neutral chroma.
  const uint8_t yuv[6] = {16, 235, 235, 16, 128, 128};
  std::vector<uint8_t> b = FrameToRgb24(yuv, FrameFormat::kYuv420p, 2, 2, YuvMatrix::kBt709, false);
  CHECK(b == std::vector<uint8_t>{0, 0, 0, 255, 255, 255, 255, 255, 255, 0, 0, 0});
  // Pure red in BT.709 limited range: Y 63, Cb 102, Cr 240.
  const uint8_t red[6] = {63, 63, 63, 63, 102, 240};
  std::vector<uint8_t> c = FrameToRgb24(red, FrameFormat::kYuv420p, 2, 2, YuvMatrix::kBt709, false);
  CHECK(c[0] >= 250);
  CHECK(c[1] <= 5);
  CHECK(c[2] <= 5);
  // Every second pixel of every second row: a 3x3 rgb24 frame becomes 2x2.
  uint8_t rgb9[27];
  for (int i = 0; i < 27; ++i) rgb9[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> d =
      FrameToRgb24(rgb9, FrameFormat::kRgb24, 3, 3, YuvMatrix::kBt601, false, 2);
  CHECK(d == std::vector<uint8_t>{0, 1, 2, 6, 7, 8, 18, 19, 20, 24, 25, 26});
}

TEST_CASE(
    "report stills: an upscaler's stills are 1:1 crops of the output beside the source "
    "scaled the same way") {
  const StillCrop big = CenterCrop(1920, 1080);
  CHECK(big.x == 760);
  CHECK(big.y == 340);
  CHECK(big.width == kCropSide);
  CHECK(big.height == kCropSide);
  const StillCrop small = CenterCrop(300, 200);
  CHECK((small.x == 0 && small.y == 0 && small.width == 300 && small.height == 200));
  if (!StillsAvailable()) {
    MESSAGE("skipped the scaling: this build has no OpenCV");
    return;
  }
  // A horizontal ramp, 10 per source column, scaled 4x: bicubic keeps a ramp a ramp, so the crop
  // from output column 20 holds 10 * ((20 + j + 0.5) / 4 - 0.5) in its column j (away from the
  // picture's edges, where the border is replicated).
  std::vector<uint8_t> ramp(16 * 8 * 3);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 16; ++c) {
      for (int k = 0; k < 3; ++k) ramp[(r * 16 + c) * 3 + k] = static_cast<uint8_t>(10 * c);
    }
  }
  StillCrop crop;
  crop.x = 20, crop.y = 8, crop.width = 24, crop.height = 10;
  std::vector<uint8_t> scaled = ScaledCrop(ramp, 16, 8, 64, 32, crop);
  REQUIRE(scaled.size() == size_t(24 * 10 * 3));
  for (int j = 0; j < 24; ++j) {
    INFO("column " << j);
    CHECK(std::abs(scaled[(5 * 24 + j) * 3] - 10 * ((20 + j + 0.5) / 4 - 0.5)) <= 1.5);
  }
  // The output's crop is its pixels as they are.
  std::vector<uint8_t> out(64 * 32 * 3);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i % 251);
  std::vector<uint8_t> cut = CropRgb(out, 64, crop);
  REQUIRE(cut.size() == size_t(24 * 10 * 3));
  CHECK(cut[0] == out[(8 * 64 + 20) * 3]);
  CHECK(cut[(9 * 24 + 23) * 3 + 2] == out[(17 * 64 + 43) * 3 + 2]);

  // A captured still of a 16x8 -> 64x32 model says it is a crop, and the page shows it 1:1.
  ArenaGeometry arena;
  arena.in_width = 16, arena.in_height = 8, arena.out_width = 64, arena.out_height = 32;
  StillCapture capture({0}, arena);
  capture.Capture(0, ramp.data(), out.data());
  std::string note;
  std::vector<ReportStill> stills = capture.Encode(&note);
  REQUIRE(stills.size() == 1);
  CHECK(stills[0].crop_note.find("1:1 crops (64x32 at 0,0) of the 64x32 output") == 0);
  ReportData d = Sample(0);
  d.stills = stills;
  const std::string html = RenderReportHtml(d);
  CHECK(Count(html, "<img class=\"crop\"") == 2);
  CHECK(html.find("the source scaled to the output's size (bicubic)") != std::string::npos);
  // A larger output: the middle 400x400, from its rows 8 to 407.
  arena.out_width = 512, arena.out_height = 416;
  std::vector<uint8_t> large(512 * 416 * 3, 200);
  StillCapture middle({0}, arena);
  middle.Capture(0, ramp.data(), large.data());
  stills = middle.Encode(&note);
  REQUIRE(stills.size() == 1);
  CHECK(stills[0].crop_note.find("1:1 crops (400x400 at 56,8) of the 512x416 output") == 0);
  CHECK(stills[0].output_uri.find("data:image/jpeg;base64,") == 0);
  CHECK(stills[0].input_uri.find("data:image/jpeg;base64,") == 0);
  // Same-size models keep whole frames, scaled alike.
  arena.out_width = 16, arena.out_height = 8;
  StillCapture whole({0}, arena);
  whole.Capture(0, ramp.data(), ramp.data());
  stills = whole.Encode(&note);
  REQUIRE(stills.size() == 1);
  CHECK(stills[0].crop_note.empty());
}
