// framemill-face-detector: BlazeFace over pictures the supervisor sends, in a process confined
// as a worker is (worker/sandbox/: Landlock, seccomp, no_new_privs, rlimits, namespaces), since
// the detector is a file a job names and OpenCV parses it. The conversation is
// common/face_detection.h's; the supervisor's side is supervisor/faces/detector_process.h.
//
//   framemill-face-detector --detector-fd N [--name TEXT] [--threads T] [--min-score S]
//                           [--nms-iou I] [--max-faces M] [--sandbox required|auto|off]
//                           [--log-level L]
//
// The detector comes as descriptor N (a regular file, read whole after the sandbox is on); the
// pictures on stdin, the faces on stdout, the log on stderr. Exits 0 when stdin ends, 1 with the
// reason on stderr when it cannot start or the conversation breaks, 2 on a bad command line.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/face_detection.h"
#include "common/file_util.h"
#include "common/log_lines.h"
#include "worker/faces/face_detector.h"
#include "worker/sandbox/sandbox.h"

namespace framemill {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int64_t kMaxDetectorBytes = int64_t{256} << 20;  // BlazeFace's files are under 1 MiB

struct Args {
  int detector_fd = -1;
  std::string name = "face detector";
  int threads = 1;
  FaceDetectorOptions detection;
  SandboxOptions sandbox;
  std::string log_level = "info";
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "framemill-face-detector: %s\nusage: framemill-face-detector --detector-fd N "
               "[--name TEXT] [--threads T] [--min-score S] [--nms-iou I] [--max-faces M] "
               "[--sandbox required|auto|off] [--log-level L]\n",
               why.c_str());
  return kExitUsage;
}

bool Parse(int argc, char** argv, Args* a, std::string* why) {
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) {
      *why = key + " needs a value";
      return false;
    }
    const std::string v = argv[++i];
    char* end = nullptr;
    if (key == "--detector-fd") {
      a->detector_fd = static_cast<int>(std::strtol(v.c_str(), &end, 10));
    } else if (key == "--name") {
      a->name = v;
      continue;
    } else if (key == "--threads") {
      a->threads = static_cast<int>(std::strtol(v.c_str(), &end, 10));
    } else if (key == "--min-score") {
      a->detection.min_score = std::strtof(v.c_str(), &end);
    } else if (key == "--nms-iou") {
      a->detection.nms_iou = std::strtof(v.c_str(), &end);
    } else if (key == "--max-faces") {
      a->detection.max_faces = static_cast<int>(std::strtol(v.c_str(), &end, 10));
    } else if (key == "--sandbox") {
      std::optional<WorkerSandbox> mode = ParseWorkerSandbox(v);
      if (!mode) {
        *why = "--sandbox " + v + ": not required, auto or off";
        return false;
      }
      a->sandbox.mode = *mode;
      continue;
    } else if (key == "--log-level") {
      a->log_level = v;
      continue;
    } else {
      *why = "unknown argument " + key;
      return false;
    }
    if (end == v.c_str() || *end != '\0') {
      *why = key + " " + v + ": not a number";
      return false;
    }
  }
  if (a->detector_fd < 3) *why = "--detector-fd is required (a descriptor above 2)";
  if (a->threads < 1 || a->threads > kMaxDetectorThreads) *why = "--threads: 1 to 256";
  return why->empty();
}

// The detector's bytes, from its descriptor: a regular file of at most kMaxDetectorBytes.
Result<std::vector<uint8_t>> ReadDetector(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(StatusCode::kModelInvalid, name + ": not a regular file");
  }
  if (st.st_size > kMaxDetectorBytes) {
    return Status(StatusCode::kModelInvalid, name + ": larger than 256 MiB");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  Result<bool> got = ReadAllFromFd(fd, bytes.data(), bytes.size(), name);
  if (!got.ok()) return got.status();
  ::close(fd);
  return bytes;
}

// Detects the faces of `count` pictures in `pixels` with one detector per thread and writes the
// answers in order.
Status AnswerBatch(std::vector<FaceDetector>& detectors, const BatchHeader& h,
                   const std::vector<uint8_t>& pixels) {
  const size_t picture = size_t{h.width} * h.height * 3;
  std::vector<Result<std::vector<Face>>> found(h.count, std::vector<Face>());
  std::vector<uint32_t> micros(h.count, 0);
  std::vector<std::thread> pool;
  const size_t threads = std::min<size_t>(detectors.size(), h.count);
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < h.count; i += threads) {
        const ImageView view{pixels.data() + i * picture, static_cast<int>(h.width),
                             static_cast<int>(h.height), int64_t{h.width} * 3, ChannelOrder::kRgb};
        const uint64_t start = MonotonicUs();
        found[i] = detectors[t].Detect(view);
        micros[i] = static_cast<uint32_t>(std::min<uint64_t>(MonotonicUs() - start, UINT32_MAX));
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (uint32_t i = 0; i < h.count; ++i) {
    if (!found[i].ok()) return found[i].status();
    std::vector<FaceRecord> records;
    for (const Face& f : *found[i]) records.push_back(ToRecord(f));
    if (records.size() > kMaxFacesPerPicture) records.resize(kMaxFacesPerPicture);
    FacesHeader fh;
    fh.faces = static_cast<uint32_t>(records.size());
    fh.detect_us = micros[i];
    FM_RETURN_IF_ERROR(WriteAllToFd(1, &fh, sizeof fh, "stdout"));
    FM_RETURN_IF_ERROR(
        WriteAllToFd(1, records.data(), records.size() * sizeof(FaceRecord), "stdout"));
  }
  return Status::Ok();
}

// Loads the detector (one per thread), says hello (its input size, `summary`), then answers
// batches until stdin ends.
Status Serve(const Args& args, const std::string& summary) {
  Result<std::vector<uint8_t>> onnx = ReadDetector(args.detector_fd, args.name);
  if (!onnx.ok()) return onnx.status();
  std::vector<FaceDetector> detectors;
  for (int t = 0; t < args.threads; ++t) {
    Result<FaceDetector> d = FaceDetector::Load(*onnx, args.name, args.detection);
    if (!d.ok()) return d.status();
    detectors.push_back(std::move(*d));
  }
  onnx->clear();
  onnx->shrink_to_fit();
  DetectorHello hello;
  hello.input_size = detectors.front().input_size();
  hello.sandbox_bytes = static_cast<uint32_t>(summary.size());
  FM_RETURN_IF_ERROR(WriteAllToFd(1, &hello, sizeof hello, "stdout"));
  FM_RETURN_IF_ERROR(WriteAllToFd(1, summary.data(), summary.size(), "stdout"));
  std::vector<uint8_t> pixels;
  for (;;) {
    BatchHeader h;
    Result<bool> got = ReadAllFromFd(0, &h, sizeof h, "stdin");
    if (!got.ok()) return got.status();
    if (!*got) return Status::Ok();  // the supervisor is done
    FM_RETURN_IF_ERROR(CheckBatch(h));
    if (h.count == 0 || h.count > kMaxBatchPictures) {
      return Status(StatusCode::kInputInvalid, "a batch of " + std::to_string(h.count) +
                                                   " pictures (1 to 1024)");
    }
    pixels.resize(size_t{h.count} * h.width * h.height * 3);
    got = ReadAllFromFd(0, pixels.data(), pixels.size(), "stdin");
    if (!got.ok()) return got.status();
    if (!*got) return Status(StatusCode::kIo, "stdin ended before the batch's pictures");
    FM_RETURN_IF_ERROR(AnswerBatch(detectors, h, pixels));
  }
}

int Main(int argc, char** argv) {
  Args args;
  std::string why;
  if (!Parse(argc, argv, &args, &why)) return Usage(why);
  InitLogging("face-detector", args.log_level);
  // On before a byte of the detector is read; the descriptor is all it keeps.
  args.sandbox.keep_fds = {args.detector_fd};
  Result<SandboxReport> report = ApplySandbox(args.sandbox);
  if (!report.ok()) {
    std::fprintf(stderr, "framemill-face-detector: the sandbox failed: %s\n",
                 report.status().message().c_str());
    return kExitFailed;
  }
  const std::string summary = report->Summary().substr(0, kMaxSandboxSummary);
  // The summary goes to the supervisor in the hello; a degraded one is said here too.
  if (!report->off && !report->complete()) LogWarn("face detector sandbox: " + summary);
  Status served = Serve(args, summary);
  if (!served.ok()) {
    std::fprintf(stderr, "framemill-face-detector: %s\n", served.ToString().c_str());
    return kExitFailed;
  }
  return 0;
}

}  // namespace
}  // namespace framemill

int main(int argc, char** argv) { return framemill::Main(argc, argv); }
