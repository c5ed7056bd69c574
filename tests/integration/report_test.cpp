// The job report (<output>.report.html) of real jobs: written beside the output for a finished
// job and for a failed one, named by `framemill run`, and seen in a real browser: headless
// Chromium renders it to a PNG and OpenCV checks that the plots and the stills are drawn.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "fault_harness.h"
#include "harness.h"
#include "supervisor/report/report_html.h"
#include "supervisor/process/subprocess.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

cv::Vec3b Bgr(const char* hex) {  // "#rrggbb"
  unsigned v = static_cast<unsigned>(std::stoul(std::string(hex + 1), nullptr, 16));
  return cv::Vec3b(v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff);
}

int Distance(const cv::Vec3b& a, const cv::Vec3b& b) {
  return std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]);
}

// The box of the rows and columns that hold at least 20 pixels of exactly `hex` (a flat fill: a
// plot's background); a stray pixel of that colour elsewhere (in text's anti-aliasing, in a
// picture) moves nothing.
cv::Rect AreaOf(const cv::Mat& shot, const char* hex) {
  const cv::Vec3b c = Bgr(hex);
  std::vector<int> rows(shot.rows, 0), cols(shot.cols, 0);
  for (int y = 0; y < shot.rows; ++y) {
    for (int x = 0; x < shot.cols; ++x) {
      if (shot.at<cv::Vec3b>(y, x) == c) ++rows[y], ++cols[x];
    }
  }
  auto span = [](const std::vector<int>& n, int* lo, int* hi) {
    *lo = -1, *hi = -1;
    for (int i = 0; i < static_cast<int>(n.size()); ++i) {
      if (n[i] < 20) continue;
      if (*lo < 0) *lo = i;
      *hi = i;
    }
  };
  int x0, x1, y0, y1;
  span(cols, &x0, &x1);
  span(rows, &y0, &y1);
  return x0 < 0 || y0 < 0 ? cv::Rect() : cv::Rect(x0, y0, x1 - x0 + 1, y1 - y0 + 1);
}

// Pixels in `area` within a small distance of `hex` (lines are anti-aliased: their middle is
// the colour, their edges blend into the background).
int PixelsNear(const cv::Mat& shot, const cv::Rect& area, const char* hex) {
  const cv::Vec3b c = Bgr(hex);
  int n = 0;
  for (int y = area.y; y < area.y + area.height; ++y) {
    for (int x = area.x; x < area.x + area.width; ++x)
      n += Distance(shot.at<cv::Vec3b>(y, x), c) < 40;
  }
  return n;
}

// Pixels in `area` that are neither the background `hex` nor near white: drawn content.
int Drawn(const cv::Mat& shot, const cv::Rect& area, const char* hex) {
  const cv::Vec3b bg = Bgr(hex), white(255, 255, 255);
  int n = 0;
  for (int y = area.y; y < area.y + area.height; ++y) {
    for (int x = area.x; x < area.x + area.width; ++x) {
      const cv::Vec3b p = shot.at<cv::Vec3b>(y, x);
      n += Distance(p, bg) > 24 && Distance(p, white) > 24;
    }
  }
  return n;
}

// Whether a worker of the job that wrote `output` reported GPU memory (its timeline's figures).
bool HasGpuFigures(const std::string& output) {
  for (const nlohmann::json& row : ReadTimeline(output)) {
    if (row.value("gpu_reserved_mb", 0.0) > 0 || row.value("gpu_allocated_mb", 0.0) > 0 ||
        row.value("gpu_process_mb", 0.0) > 0) {
      return true;
    }
  }
  return false;
}

// A job over d0.mp4 (512x512, 78 frames) in chunks of 8 through `model` on one worker, recycled
// after every 3 chunks.
nlohmann::json Job(const std::string& dir, const std::string& model) {
  return {{"input", TestClip("d0.mp4")},
          {"output", dir + "/out.mp4"},
          {"model", ModelCopy(model, dir)},
          {"workers", 1},
          {"chunk_frames", 8},
          {"segment_seconds", 2},
          {"device", TestDevice()},
          {"recycle", {{"max_chunks", 3}, {"jitter", 0.0}}}};
}

}  // namespace

TEST_CASE("report: a real job's report renders in Chromium with its plots, markers and stills") {
  const std::string dir = ScratchDir("report_browser");
  RunResult r = RunJob(dir, Job(dir, "invert"));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string report = dir + "/out.mp4.report.html";
  CHECK(r.out.find("framemill: report: " + report) != std::string::npos);
  REQUIRE(fs::exists(report));
  const std::string html = ReadText(report);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=\"http") == std::string::npos);
  // A job whose workers reported no GPU memory (a CPU job) has no GPU plot: one sentence in its
  // place.
  const bool gpu_job = HasGpuFigures(dir + "/out.mp4");
  const int memory_plots = gpu_job ? 2 : 1;
  CHECK((html.find("<svg class=\"plot gpu\"") != std::string::npos) == gpu_job);
  if (!gpu_job) CHECK(html.find("no GPU figures: the workers ran on the CPU") != std::string::npos);
  // >= 1 per memory plot, + the legends.
  CHECK(Count(html, "class=\"ev-recycle\"") >= 2 * memory_plots);
  CHECK(Count(html, "<img ") == 2 * 4);  // 4 frames, before and after
  CHECK(Count(html, "src=\"data:image/jpeg;base64,") == 2 * 4);

  // Rendered by a real browser, the way a person would see it.
  const std::string png = dir + "/report.png";
  framemill::Result<framemill::CommandOutput> shot = framemill::RunAndCapture(
      {FRAMEMILL_TEST_CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
       "--force-color-profile=srgb", "--force-device-scale-factor=1", "--no-first-run",
       "--disable-extensions", "--user-data-dir=" + dir + "/chromium-profile",
       "--window-size=1000,3200", "--screenshot=" + png, "file://" + report});
  REQUIRE(shot.ok());
  INFO("chromium: " << shot->err);
  REQUIRE(shot->exit_code == 0);
  cv::Mat img = cv::imread(png, cv::IMREAD_COLOR);
  REQUIRE(!img.empty());
  CHECK(img.cols == 1000);

  // Each plot's area is there, full size, and has something drawn in it.
  cv::Rect rss = AreaOf(img, framemill::kRssPlotColor);
  cv::Rect gpu = AreaOf(img, framemill::kGpuPlotColor);
  cv::Rect fps = AreaOf(img, framemill::kThroughputPlotColor);
  cv::Rect stages = AreaOf(img, framemill::kStagesPlotColor);
  INFO("rss " << rss << " gpu " << gpu << " fps " << fps << " stages " << stages);
  for (const cv::Rect& a :
       gpu_job ? std::vector<cv::Rect>{rss, gpu, fps} : std::vector<cv::Rect>{rss, fps}) {
    CHECK(a.width > 750);
    CHECK(a.height > 150);
  }
  CHECK(stages.width > 400);
  if (gpu_job) {
    CHECK(rss.y < gpu.y);
    CHECK(gpu.y < fps.y);
    CHECK(Drawn(img, gpu, framemill::kGpuPlotColor) > 100);  // the GPU lines
  } else {
    CHECK(gpu.area() == 0);  // no empty panel
    CHECK(rss.y < fps.y);
  }
  CHECK(fps.y < stages.y);
  // The worker's RSS line and its recycle markers; the throughput line; the busy bars.
  CHECK(PixelsNear(img, rss, framemill::kWorkerColors[0]) > 300);
  CHECK(PixelsNear(img, rss, framemill::kRecycleColor) > 30);
  CHECK(PixelsNear(img, fps, framemill::kWorkerColors[0]) > 300);
  CHECK(PixelsNear(img, stages, "#4c9a2a") > 500);

  // The stills: below the plots, and most of their box is picture, not background.
  cv::Rect stills = AreaOf(img, framemill::kStillsColor);
  INFO("stills " << stills);
  REQUIRE(stills.area() > 0);
  CHECK(stills.y > stages.y);
  CHECK(stills.width >= 800);
  // 8 images of 400x400 px, d0.mp4 and its inverse: far more than half of each is not grey.
  CHECK(Drawn(img, stills, framemill::kStillsColor) > 8 * 400 * 400 / 2);
}

TEST_CASE("report: a job whose worker always crashes still gets a report that says it failed") {
  const std::string dir = ScratchDir("report_failed");
  nlohmann::json job = Job(dir, "identity");
  job["max_attempts"] = 2;
  RunResult r =
      WaitJob(StartJob(dir, job, {{"FRAMEMILL_TEST_FAULT", "crash@40"}}, WithFaultWorker()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 1);
  const std::string report = dir + "/out.mp4.report.html";
  CHECK(r.err.find("framemill: report: " + report) != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out.mp4"));
  REQUIRE(fs::exists(report));
  const std::string html = ReadText(report);
  CHECK(html.find("class=\"outcome failed\"") != std::string::npos);
  CHECK(html.find("failed 2 times") != std::string::npos);  // the failure
  // Both crashes, on each memory plot (a CPU job has no GPU plot), + the legends.
  CHECK(Count(html, "class=\"ev-crash\"") >= (HasGpuFigures(dir + "/out.mp4") ? 2 * 2 : 2 + 1));
  CHECK(html.find("<svg class=\"plot rss\"") != std::string::npos);
}

TEST_CASE("report: a report that cannot be written is a warning, never a failed job") {
  const std::string dir = ScratchDir("report_unwritable");
  // A non-empty directory where the report goes: no rename can replace it.
  fs::create_directories(dir + "/out.mp4.report.html/keep");
  RunResult r = RunJob(dir, Job(dir, "identity"));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(CountFrames(dir + "/out.mp4") == 78);
  CHECK(r.out.find("framemill: warning: job report not written") != std::string::npos);
  CHECK(r.out.find("framemill: report:") == std::string::npos);
  CHECK(fs::is_directory(dir + "/out.mp4.report.html/keep"));
  for (const auto& e : fs::directory_iterator(dir)) {  // no temporary file left behind
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
}
