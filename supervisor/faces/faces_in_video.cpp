#include "supervisor/faces/faces_in_video.h"

#include <algorithm>
#include <cstdio>
#include <cctype>

#include "common/checked_file.h"
#include "common/file_util.h"
#include "supervisor/faces/detector_process.h"
#include "supervisor/media/source_intake.h"
#include "supervisor/media/preview_frames.h"
#include "supervisor/process/subprocess.h"

#ifdef FRAMEMILL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "supervisor/media/png_encode.h"
#endif

namespace framemill {

namespace {

nlohmann::json PointJson(const FacePoint& p) { return nlohmann::json::array({p.x, p.y}); }

nlohmann::json FaceJson(const Face& f) {
  nlohmann::json keypoints = nlohmann::json::object();
  for (int k = 0; k < kFaceKeypoints; ++k) {
    keypoints[Name(static_cast<FaceKeypoint>(k))] = PointJson(f.keypoints[k]);
  }
  return {{"box", {f.x, f.y, f.width, f.height}}, {"score", f.score}, {"keypoints", keypoints}};
}

// One frame at `time` s, decoded by ffmpeg as a PPM picture (RGB24, upright).
Result<RgbPicture> DecodeFrameAt(const std::string& ffmpeg, const SourceFile& source,
                                 double time) {
  char t[32];
  std::snprintf(t, sizeof t, "%.6f", time);
  std::vector<std::string> argv = {ffmpeg, "-v", "error", "-nostdin"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(), {"-ss", t, "-i", FdPath(source.fd), "-map", "0:v:0", "-frames:v", "1",
                           "-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "pipe:1"});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->out.empty()) {
    return Status(StatusCode::kInputInvalid,
                  source.name + ": ffmpeg gave no frame at " + t + " s (" + DescribeExit(*r) +
                      "): " + LastLines(r->err, 5));
  }
  Result<RgbPicture> picture = ParsePpm(r->out);
  if (!picture.ok()) return picture.status().WithContext(source.name + " at " + t + " s");
  return picture;
}

#ifdef FRAMEMILL_HAVE_OPENCV
// `picture` with each face's box (green) and keypoints (eyes red, nose blue, mouth yellow, ears
// magenta) drawn, as a PNG written atomically to `path`.
Status DrawFaces(RgbPicture picture, const std::vector<Face>& faces, const std::string& path) {
  cv::Mat img(picture.height, picture.width, CV_8UC3, picture.pixels.data());
  const int thick = std::max(1, std::min(picture.width, picture.height) / 240);
  const cv::Scalar colours[kFaceKeypoints] = {{255, 0, 0},   {255, 0, 0},   {0, 0, 255},
                                              {255, 255, 0}, {255, 0, 255}, {255, 0, 255}};
  for (const Face& f : faces) {
    cv::rectangle(img, cv::Rect2f(f.x, f.y, f.width, f.height), cv::Scalar(0, 255, 0), thick);
    for (int k = 0; k < kFaceKeypoints; ++k) {
      cv::circle(img, cv::Point2f(f.keypoints[k].x, f.keypoints[k].y), 2 * thick, colours[k],
                 cv::FILLED);
    }
  }
  Result<std::vector<uint8_t>> png = EncodePng(img.data, picture.width, picture.height);
  if (!png.ok()) return png.status();
  Status s = AtomicWriteFile(path, std::string(png->begin(), png->end()), 0644);
  if (!s.ok()) return Status(StatusCode::kOutputInvalid, s.message());
  return Status::Ok();
}
#endif

}  // namespace

Result<RgbPicture> ParsePpm(const std::string& bytes) {
  // "P6", then width, height and maxval as decimal numbers, each after whitespace (a '#' starts a
  // comment to the end of the line), then one whitespace byte, then the pixels.
  size_t at = 0;
  auto bad = [](const std::string& why) {
    return Status(StatusCode::kInputInvalid, "not a binary RGB PPM picture: " + why);
  };
  if (bytes.compare(0, 2, "P6") != 0) return bad("no P6 signature");
  at = 2;
  long fields[3] = {0, 0, 0};
  for (long& field : fields) {
    while (at < bytes.size() && (std::isspace(static_cast<unsigned char>(bytes[at])) ||
                                 bytes[at] == '#')) {
      if (bytes[at] == '#') {
        while (at < bytes.size() && bytes[at] != '\n') ++at;
      } else {
        ++at;
      }
    }
    size_t digits = 0;
    while (at < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[at])) &&
           digits < 7) {
      field = field * 10 + (bytes[at++] - '0');
      ++digits;
    }
    if (digits == 0 || digits == 7) return bad("a header number missing or too large");
  }
  if (fields[2] != 255) return bad("maxval " + std::to_string(fields[2]) + ", not 255");
  if (fields[0] <= 0 || fields[1] <= 0) return bad("an empty picture");
  if (at >= bytes.size() || !std::isspace(static_cast<unsigned char>(bytes[at]))) {
    return bad("no whitespace after the header");
  }
  ++at;
  const size_t need = static_cast<size_t>(fields[0]) * static_cast<size_t>(fields[1]) * 3;
  if (bytes.size() - at < need) return bad("cut short");
  RgbPicture p;
  p.width = static_cast<int>(fields[0]);
  p.height = static_cast<int>(fields[1]);
  p.pixels = bytes.substr(at, need);
  return p;
}

nlohmann::json FacesReport::ToJson() const {
  nlohmann::json frames_json = nlohmann::json::array();
  for (const SampledFaces& s : frames) {
    nlohmann::json faces_json = nlohmann::json::array();
    for (const Face& f : s.faces) faces_json.push_back(FaceJson(f));
    nlohmann::json one = {{"time", s.time},           {"width", s.width},
                          {"height", s.height},       {"detect_ms", s.detect_ms},
                          {"faces", faces_json}};
    if (!s.drawing.empty()) one["drawing"] = s.drawing;
    frames_json.push_back(one);
  }
  return {{"video", video},
          {"detector", detector},
          {"input_size", input_size},
          {"detector_sandbox", detector_sandbox},
          {"frames", frames_json}};
}

std::string FacesReport::ToText() const {
  std::string text = "detector " + detector + " (" + std::to_string(input_size) + "x" +
                     std::to_string(input_size) + ")\n";
  char line[256];
  for (const SampledFaces& s : frames) {
    std::snprintf(line, sizeof line, "%.3f s (%dx%d): %zu face%s, detection %.1f ms\n", s.time,
                  s.width, s.height, s.faces.size(), s.faces.size() == 1 ? "" : "s", s.detect_ms);
    text += line;
    for (const Face& f : s.faces) {
      std::snprintf(line, sizeof line, "  box %.0f,%.0f %.0fx%.0f score %.3f:", f.x, f.y, f.width,
                    f.height, f.score);
      text += line;
      for (int k = 0; k < kFaceKeypoints; ++k) {
        std::snprintf(line, sizeof line, " %s %.0f,%.0f", Name(static_cast<FaceKeypoint>(k)),
                      f.keypoints[k].x, f.keypoints[k].y);
        text += line;
      }
      text += "\n";
    }
    if (!s.drawing.empty()) text += "  drawn: " + s.drawing + "\n";
  }
  return text;
}

Result<FacesReport> FindFacesInVideo(const Config& config, const std::string& video,
                                     const FacesInVideoOptions& options,
                                     const std::atomic<bool>& stop) {
#ifndef FRAMEMILL_HAVE_OPENCV
  (void)config, (void)video, (void)options, (void)stop;
  return Status(StatusCode::kInternal,
                "framemill faces needs OpenCV, libjpeg and libpng; this framemill was built "
                "without them (Debian: libopencv-dev libjpeg-dev libpng-dev; configure again)");
#else
  DetectorSetup setup;
  setup.detector = options.detector;
  setup.detection = options.detection;
  setup.sandbox = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  setup.binary = config.face_detector_binary;
  Result<std::unique_ptr<DetectorProcess>> detector = DetectorProcess::Start(setup, stop);
  if (!detector.ok()) return detector.status();
  // The video named on the command line by the person running it, not a job's: no roots.
  Result<TakenSource> taken = TakeSource(
      video, SourceRules{config.ffprobe, InputRoots::Anywhere(), PlaylistInputs::kRefuse, nullptr},
      /*frame_times=*/false);
  if (!taken.ok()) return taken.status();
  const SourceFile& source = taken->source;
  const MediaInfo* info = &taken->media;
  if (!options.draw_dir.empty()) {
    Status made = MakeDirectories(options.draw_dir);
    if (!made.ok()) return Status(StatusCode::kOutputInvalid, made.message());
  }
  // Samples span the video stream where its frame count says it ends before the container.
  double span = info->duration;
  const VideoStreamInfo& v = info->video;
  if (v.header_frames > 0 && v.frame_rate.value() > 0) {
    span = std::min(span, v.header_frames / v.frame_rate.value());
  }
  FacesReport report;
  report.video = video;
  report.detector = options.detector;
  report.input_size = (*detector)->input_size();
  report.detector_sandbox = (*detector)->sandbox();
  int index = 0;
  for (double time : SampleTimes(span, options.frames)) {
    if (stop.load()) return Status(StatusCode::kCancelled, "framemill faces: stopped");
    Result<RgbPicture> picture = DecodeFrameAt(config.ffmpeg, source, time);
    if (!picture.ok()) return picture.status();
    SampledFaces s;
    s.time = time;
    s.width = picture->width;
    s.height = picture->height;
    Result<std::vector<DetectedPicture>> found = (*detector)->Detect(
        reinterpret_cast<const uint8_t*>(picture->pixels.data()), 1,
        static_cast<uint32_t>(s.width), static_cast<uint32_t>(s.height), stop);
    if (!found.ok()) return found.status();
    s.detect_ms = found->front().ms;
    s.faces = std::move(found->front().faces);
    if (!options.draw_dir.empty()) {
      char name[32];
      std::snprintf(name, sizeof name, "/faces-%03d.png", ++index);
      s.drawing = options.draw_dir + name;
      FM_RETURN_IF_ERROR(DrawFaces(std::move(*picture), s.faces, s.drawing));
    }
    report.frames.push_back(std::move(s));
  }
  return report;
#endif
}

}  // namespace framemill
