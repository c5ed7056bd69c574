// The job report's renderer (a pure function) and the stills' pixel conversion.
#include <doctest/doctest.h>

#include <regex>
#include <string>

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

TEST_CASE("report: without GPU figures the GPU plot says so instead of drawing zeros") {
  const std::string html = RenderReportHtml(Sample(0));
  CHECK(html.find("no GPU figures") != std::string::npos);
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
  d.stills = {{0, "data:image/jpeg;base64,AAAA", "data:image/jpeg;base64,BBBB"},
              {96, "data:image/jpeg;base64,CCCC", "data:image/jpeg;base64,DDDD"}};
  const std::string html = RenderReportHtml(d);
  CHECK(Count(html, "<img ") == 4);
  CHECK(html.find("src=\"data:image/jpeg;base64,DDDD\"") != std::string::npos);
  CHECK(html.find("frame 96, as the model gave it back") != std::string::npos);
  CHECK(html.find("stills: ") == std::string::npos);
}

TEST_CASE("report: throughput is frames finished per window, from each worker's chunk events") {
  // Worker 0 gen 1 finishes 32 frames at 0.5 s and 32 more at 1.5 s; its replacement (gen 3)
  // counts from 0 again: 32 at 1.7 s. Worker 1: 64 at 1.9 s.
  std::vector<TimelineRecord> t = {
      Event(0.5, 0, 1, K::kChunk, 32, 1), Event(1.5, 0, 1, K::kChunk, 64, 1),
      Event(1.7, 0, 3, K::kChunk, 32, 1), Event(1.9, 1, 2, K::kChunk, 64, 1),
      Event(2.5, 0, 1, K::kStop, 64, 1)};
  std::vector<std::pair<double, double>> fps = ThroughputSeries(t, 1.0);
  REQUIRE(fps.size() == 3);
  CHECK(fps[0].first == doctest::Approx(0.5));
  CHECK(fps[0].second == doctest::Approx(32));
  CHECK(fps[1].second == doctest::Approx(32 + 32 + 64));
  CHECK(fps[2].second == doctest::Approx(0));
  CHECK(ThroughputSeries({Event(1, 0, 1, K::kStart, 0, 0)}, 1.0).empty());
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
