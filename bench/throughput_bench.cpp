// framemill-bench: one input, one model, every way of running it, side by side in one run.
//
//   naive              one process, frame by frame: decode, model, encode (today's loop)
//   naive+empty_cache  the same with the CUDA cache emptied after every frame (the usual fix)
//   transcode          decode and encode alone, same encoder settings (the I/O limit)
//   model              the model alone on frames already on the device, best of batch 1-16 with
//                      channels-last or NCHW input (the compute limit); beside it, the time
//                      of the first call at that shape (warm-up, not in its fps); then, on
//                      CUDA, the same settings again for 10 s ($FRAMEMILL_BENCH_MODEL_SECONDS),
//                      the rate a GPU busy for minutes keeps (its clock falls as it warms)
//   framemill Nw       `framemill run` with N workers
//
// Prints frames per second, CPU seconds per frame, peak RSS and (on CUDA) peak GPU memory, then
// the ratios framemill / min(transcode, model) and framemill / naive.
//
// usage: framemill-bench INPUT MODEL DEVICE [WORKERS...]     (default workers: 1 2 4)
// $FRAMEMILL_BENCH_PRECISION (fp32 | fp16 | bf16, default fp32) and $FRAMEMILL_BENCH_COLOR
// (accurate | fast, default accurate) apply to every run; $FRAMEMILL_BENCH_ENCODERS (default 1)
// and $FRAMEMILL_BENCH_OPTIMIZE (model_optimization, default auto) to framemill's, and so does
// $FRAMEMILL_BENCH_CUDNN_AUTOTUNE=1 (cudnn_autotune; the model row always autotunes), and
// $FRAMEMILL_BENCH_BATCH (the job's batch; default: a one-shape package's own, else the job's).
// $FRAMEMILL_BENCH_GPUS ("0,1") adds framemill rows with WORKERS per GPU on each listed GPU, beside
// the one-device rows. $FRAMEMILL_BENCH_BASELINES=0 runs framemill's rows alone (to compare
// framemill settings with each other when the baselines are already known). Run from the build
// directory (it starts ./framemill). Scratch files go to /tmp, removed at the end unless
// $FRAMEMILL_BENCH_KEEP is set (to compare the rows' outputs: naive.nut, fm-N.mkv).
//
// Face mode: $FRAMEMILL_BENCH_FACE_TABLE=TABLE (a face table of INPUT, `framemill faces INPUT
// --table`; bench/face-input.sh makes both) makes MODEL a face model (face_size the table's):
//   naive        per frame: decode, the frame's faces from the table, crop them, the model on
//                them (batch = the frame's faces), paste back (worker/batch/face_composite.h, the
//                worker's own code, on the model's device), encode; a frame without faces goes
//                to the encoder untouched
//   model        the model alone on crops already on the device (best of batch 1-16), as frames
//                per second at the table's mean faces per frame
//   framemill    `framemill run` with "mode": "faces" and "face_table": TABLE (no detection)
// Detection is not in any row (the table has it): its cost, measured where the table was made, is
// printed from the table.
#include <cstdint>
#include <optional>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/checked_file.h"
#include "common/model_card.h"
#include "common/clock.h"
#include "common/proc_status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/media/source_intake.h"
#include "worker/batch/face_composite.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace fm = framemill;

namespace {

struct Row {
  explicit Row(std::string n) : name(std::move(n)) {}
  std::string name;
  double seconds = 0, cpu_seconds = 0;
  int64_t frames = 0;
  double peak_rss_mb = 0, peak_gpu_mb = 0;
  std::string stages;           // framemill's own account of where the time went
  double pipeline_seconds = 0;  // of it: decoding to the last segment, without start-up and mux
  std::string gpu_flat;  // per worker: GPU reserved MiB after its first chunk -> after its last
  // The model row: its first call at its shape, before the timed calls (cuDNN's algorithm search,
  // TorchScript's profiling runs), in ms; not in its fps. 0 for the other rows.
  double first_call_ms = 0;
  // The model row's settings, to run them again for its sustained rate.
  int64_t batch = 0;
  bool channels_last = false;
  double fps() const { return seconds > 0 ? frames / seconds : 0; }
};

double CpuSeconds(int who) {
  rusage r{};
  getrusage(who, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

double MaxRssMb(int who) {
  rusage r{};
  getrusage(who, &r);
  return r.ru_maxrss / 1024.0;
}

double PeakGpuMb(const torch::Device& d) {
#ifdef FRAMEMILL_WITH_CUDA
  if (d.is_cuda()) {
    auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index());
    return s.reserved_bytes[0].peak / 1048576.0;
  }
#endif
  (void)d;
  return 0;
}

void EmptyCache(const torch::Device& d) {
#ifdef FRAMEMILL_WITH_CUDA
  if (d.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)d;
}

// $FRAMEMILL_BENCH_COLOR: accurate (default) | fast | device: the job's color_conversion. The
// in-process rows decode with ffmpeg's conversion, fast for `device` (they have no workers).
std::string ColorConversion() {
  const char* c = std::getenv("FRAMEMILL_BENCH_COLOR");
  std::string v = c != nullptr ? c : "accurate";
  return v == "fast" || v == "device" ? v : "accurate";
}
bool AccurateColor() { return ColorConversion() == "accurate"; }

// $FRAMEMILL_BENCH_OPTIMIZE: auto (default) | on | off: framemill's model_optimization.
std::string Optimization() {
  const char* o = std::getenv("FRAMEMILL_BENCH_OPTIMIZE");
  return o != nullptr ? o : "auto";
}

// $FRAMEMILL_BENCH_CUDNN_AUTOTUNE=1: framemill's workers run with cudnn_autotune (default off).
bool CudnnAutotune() {
  const char* a = std::getenv("FRAMEMILL_BENCH_CUDNN_AUTOTUNE");
  return a != nullptr && std::string(a) == "1";
}

fm::SegmentFormat Format(const fm::VideoStreamInfo& v, int w, int h) {
  fm::SegmentFormat f;
  f.width = w;
  f.height = h;
  f.frame_rate = v.frame_rate;
  f.encoder.preset = "veryfast";
  f.encoder.pix_fmt = "yuv420p";  // 8-bit rgb24 frames in these rows
  f.accurate_color = AccurateColor();
  f.color = fm::ResolveColorPath(v);
  return f;
}

torch::ScalarType g_dtype = torch::kFloat32;

torch::Tensor ToModel(const uint8_t* frames, int64_t n, int h, int w, const torch::Device& d) {
  return torch::from_blob(const_cast<uint8_t*>(frames), {n, h, w, 3}, torch::kUInt8)
      .to(d)
      .permute({0, 3, 1, 2})
      .to(g_dtype)
      .div_(255.0);
}

torch::Tensor FromModel(const torch::Tensor& y) {
  return y.to(torch::kFloat32)
      .clamp(0.0, 1.0)
      .mul(255.0)
      .round()
      .to(torch::kUInt8)
      .permute({0, 2, 3, 1})
      .contiguous()
      .to(torch::kCPU);
}

// The input as the supervisor hands it to ffmpeg: an open descriptor with the job restrictions.
fm::SourceFile Source(const fm::UniqueFd& fd, const std::string& name) {
  auto restrictions = fm::InputRestrictions("ffprobe", fm::PlaylistInputs::kRefuse);
  return fm::SourceFile{fd.get(), name,
                        restrictions.ok() ? *restrictions : std::vector<std::string>{}};
}

// Face mode's table ($FRAMEMILL_BENCH_FACE_TABLE) and its absolute path, or none.
const fm::FaceTable* g_faces = nullptr;
std::string g_faces_path;

// One frame through a face model as a per-frame face loop does it: the frame's faces cropped,
// run in one call (batch = its faces), pasted back. `frame` is the model input [1,3,H,W].
fm::Result<torch::Tensor> FrameFaces(fm::FrameModel& model, torch::Tensor frame,
                                     const std::vector<fm::FaceWarp>& warps) {
  fm::FaceSettings settings;
  settings.slots = static_cast<int64_t>(warps.size());
  settings.size = g_faces->face_size;
  settings.blend = g_faces->face_size / 16;  // the job's default blend
  settings.per_call = settings.slots;
  fm::FaceCompositor compositor(model, settings);
  return compositor.Run(frame, warps.data(), 1);
}

// Decode -> (model) -> encode, frame by frame, in this process.
Row Loop(const std::string& name, const std::string& input, const fm::VideoStreamInfo& v,
         fm::FrameModel* model, int out_w, int out_h, bool empty_cache, const std::string& tmp) {
  torch::InferenceMode guard;
  Row row{name};
  double cpu0 = CpuSeconds(RUSAGE_SELF) + CpuSeconds(RUSAGE_CHILDREN);
  uint64_t t0 = fm::MonotonicMs();
  fm::Result<fm::UniqueFd> in = fm::OpenCheckedFile(fm::CheckedKind::kInput, input, {});
  fm::UniqueFd out(
      ::open((tmp + "/" + name + ".nut").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  auto reader = fm::FrameReader::Start(
      "ffmpeg", Source(*in, input), v, tmp + "/dec.log", fm::FrameFormat::kRgb24,
      fm::ColorFilters(fm::ResolveColorPath(v), fm::FrameFormat::kRgb24, AccurateColor()),
      AccurateColor());
  auto enc =
      fm::SegmentEncoder::Start("ffmpeg", out.get(), Format(v, out_w, out_h), tmp + "/enc.log");
  std::vector<uint8_t> frame(static_cast<size_t>(v.width) * v.height * 3);
  while (true) {
    fm::Result<bool> got = (*reader)->Read(frame.data());
    if (!got.ok() || !*got) break;
    const size_t index = static_cast<size_t>(row.frames);
    const bool no_faces =
        g_faces != nullptr && (index >= g_faces->frames.size() || g_faces->frames[index].empty());
    if (model == nullptr || no_faces) {
      (void)(*enc)->Write(frame.data(), frame.size());
    } else if (g_faces != nullptr) {
      fm::Result<torch::Tensor> y =
          FrameFaces(*model, ToModel(frame.data(), 1, v.height, v.width, model->device()),
                     g_faces->frames[index]);
      if (!y.ok()) {
        std::fprintf(stderr, "%s\n", y.status().ToString().c_str());
        break;
      }
      torch::Tensor out = FromModel(*y);
      (void)(*enc)->Write(out.data_ptr<uint8_t>(), static_cast<size_t>(out.numel()));
      if (empty_cache) EmptyCache(model->device());
    } else {
      torch::Tensor y =
          FromModel(*model->Run(ToModel(frame.data(), 1, v.height, v.width, model->device())));
      (void)(*enc)->Write(y.data_ptr<uint8_t>(), static_cast<size_t>(y.numel()));
      if (empty_cache) EmptyCache(model->device());
    }
    ++row.frames;
  }
  (void)(*reader)->Finish();
  (void)(*enc)->Finish();
  row.seconds = (fm::MonotonicMs() - t0) / 1000.0;
  row.cpu_seconds = CpuSeconds(RUSAGE_SELF) + CpuSeconds(RUSAGE_CHILDREN) - cpu0;
  row.peak_rss_mb = MaxRssMb(RUSAGE_SELF);
  if (model != nullptr) row.peak_gpu_mb = PeakGpuMb(model->device());
  return row;
}

void Synchronize(const torch::Device& d) {
#ifdef FRAMEMILL_WITH_CUDA
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
#endif
  (void)d;
}

// A package made for one batch size (its card's fixed_batch), else 0.
int64_t g_fixed_batch = 0;

// Up to 128 frames of the input (16 on the CPU), or face_size crops of random pixels in face
// mode, as rgb24 in `frames`; returns how many.
int64_t ModelFrames(const std::string& input, const fm::VideoStreamInfo& v,
                    const fm::FrameModel& model, const std::string& tmp,
                    std::vector<uint8_t>* frames, int* height, int* width) {
  fm::Result<fm::UniqueFd> in = fm::OpenCheckedFile(fm::CheckedKind::kInput, input, {});
  auto reader = fm::FrameReader::Start(
      "ffmpeg", Source(*in, input), v, tmp + "/dec.log", fm::FrameFormat::kRgb24,
      fm::ColorFilters(fm::ResolveColorPath(v), fm::FrameFormat::kRgb24, AccurateColor()),
      AccurateColor());
  *height = g_faces != nullptr ? g_faces->face_size : v.height;
  *width = g_faces != nullptr ? g_faces->face_size : v.width;
  const size_t fb = static_cast<size_t>(*width) * *height * 3;
  const int64_t max_frames = model.device().is_cuda() ? 128 : 16;
  int64_t n = 0;
  for (; n < max_frames; ++n) {
    frames->resize(fb * (n + 1));
    if (g_faces != nullptr) {
      torch::Tensor noise = torch::randint(256, {static_cast<int64_t>(fb)}, torch::kUInt8);
      std::copy_n(noise.data_ptr<uint8_t>(), fb, frames->data() + fb * n);
      continue;
    }
    fm::Result<bool> got = (*reader)->Read(frames->data() + fb * n);
    if (!got.ok() || !*got) break;
  }
  return n;
}

std::vector<torch::Tensor> ModelInputs(const std::vector<uint8_t>& frames, int64_t n, int64_t batch,
                                       bool channels_last, int height, int width,
                                       const torch::Device& device) {
  const size_t fb = static_cast<size_t>(width) * height * 3;
  std::vector<torch::Tensor> inputs;
  for (int64_t off = 0; off + batch <= n; off += batch) {
    torch::Tensor x = ToModel(frames.data() + fb * off, batch, height, width, device);
    inputs.push_back(x.contiguous(channels_last ? torch::MemoryFormat::ChannelsLast
                                                : torch::MemoryFormat::Contiguous));
  }
  return inputs;
}

// The model alone, at its best: frames already on the device in the model's dtype (no decode,
// upload, conversion or download timed), every batch size of 1-16 with channels-last and with
// contiguous (NCHW) input, two warm-up calls per shape (cuDNN autotuning). The row is the fastest
// of them, named with its settings, with the time of its shape's first call (the warm-up a
// worker's first chunk pays; the timed calls do not). Up to 128 frames on CUDA, 16 on the CPU.
// Face mode: face_size crops of random pixels instead of frames (a convolution's cost does not
// depend on the pixels), the row's seconds scaled to frames at the table's mean faces per frame.
Row ModelOnly(const std::string& input, const fm::VideoStreamInfo& v, fm::FrameModel& model,
              const std::string& tmp, const std::string& tag = "") {
  torch::InferenceMode guard;
  std::vector<uint8_t> frames;
  int height = 0, width = 0;
  const int64_t n = ModelFrames(input, v, model, tmp, &frames, &height, &width);
  double faces_per_frame = 1;
  if (g_faces != nullptr && !g_faces->frames.empty()) {
    faces_per_frame = static_cast<double>(g_faces->stats.faces_found) /
                      static_cast<double>(g_faces->frames.size());
  }
  Row best{"model"};
  for (int64_t batch : {1, 2, 4, 8, 16}) {
    if (batch > n) break;
    // A package made for one shape is never called at another: it checks nothing, and reads
    // past its input (CUDA: an illegal memory access that ends the process).
    if (g_fixed_batch > 0 && batch != g_fixed_batch) continue;
    for (bool channels_last : {true, false}) {
      std::vector<torch::Tensor> inputs =
          ModelInputs(frames, n, batch, channels_last, height, width, model.device());
      const uint64_t t_first = fm::MonotonicUs();
      fm::Result<torch::Tensor> first = model.Run(inputs.front());
      Synchronize(model.device());
      if (!first.ok()) {
        std::printf("  model (batch %lld) not taken: %s\n", static_cast<long long>(batch),
                    first.status().message().substr(0, 160).c_str());
        break;
      }
      const double first_call_ms = (fm::MonotonicUs() - t_first) / 1e3;
      (void)model.Run(inputs.front());
      Synchronize(model.device());
      double cpu0 = CpuSeconds(RUSAGE_SELF);
      uint64_t t0 = fm::MonotonicUs();
      for (const torch::Tensor& x : inputs) (void)model.Run(x);
      Synchronize(model.device());
      Row r{"model (batch " + std::to_string(batch) +
            (channels_last ? ", channels-last" : ", NCHW") + tag + ")"};
      r.seconds = std::max<uint64_t>(1, fm::MonotonicUs() - t0) / 1e6 * faces_per_frame;
      r.cpu_seconds = (CpuSeconds(RUSAGE_SELF) - cpu0) * faces_per_frame;
      r.frames = batch * static_cast<int64_t>(inputs.size());
      r.peak_rss_mb = MaxRssMb(RUSAGE_SELF);
      r.peak_gpu_mb = PeakGpuMb(model.device());
      r.first_call_ms = first_call_ms;
      r.batch = batch;
      r.channels_last = channels_last;
      std::printf("  %-36s %8.2f fps, first call %.1f ms\n", r.name.c_str(), r.fps(),
                  first_call_ms);
      if (r.fps() > best.fps()) best = r;
    }
  }
  return best;
}

// The model row's settings again, for `seconds`: the rate a job of minutes meets. A GPU that
// has been busy a while runs at a lower clock than in the model row's second or so (an H200 at
// its 700 W limit: 1590-1620 MHz where it starts at 1980). Returns the fps over the whole time
// and, in `first_second`, over its first second.
double ModelSustained(const std::string& input, const fm::VideoStreamInfo& v, fm::FrameModel& model,
                      const std::string& tmp, const Row& best, double seconds,
                      double* first_second) {
  torch::InferenceMode guard;
  std::vector<uint8_t> frames;
  int height = 0, width = 0;
  const int64_t n = ModelFrames(input, v, model, tmp, &frames, &height, &width);
  std::vector<torch::Tensor> inputs =
      ModelInputs(frames, n, best.batch, best.channels_last, height, width, model.device());
  if (inputs.empty()) return 0;
  (void)model.Run(inputs.front());
  Synchronize(model.device());
  const uint64_t t0 = fm::MonotonicUs();
  int64_t done = 0;
  *first_second = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    for (const torch::Tensor& x : inputs) (void)model.Run(x);
    Synchronize(model.device());
    done += best.batch * static_cast<int64_t>(inputs.size());
    elapsed = (fm::MonotonicUs() - t0) / 1e6;
    if (*first_second == 0 && elapsed >= 1.0) *first_second = done / elapsed;
  }
  return done / elapsed;
}

// `framemill run` with `workers` workers, or with `workers` per GPU on each of `gpus`.
Row Framemill(const std::string& input, const std::string& model, const std::string& device,
              int workers, const std::vector<int>& gpus, int64_t frames, const std::string& tmp) {
  static int runs = 0;
  const std::string id = std::to_string(++runs);
  std::string job = tmp + "/job-" + id + ".json";
  const std::string output = tmp + "/fm-" + id + ".mkv";
  const char* precision = std::getenv("FRAMEMILL_BENCH_PRECISION");
  const char* encoders = std::getenv("FRAMEMILL_BENCH_ENCODERS");
  nlohmann::json j = {{"input", input},
                      {"output", output},
                      {"model", model},
                      {"device", device},
                      {"precision", precision != nullptr ? precision : "fp32"},
                      {"model_optimization", Optimization()},
                      {"cudnn_autotune", CudnnAutotune()},
                      {"color_conversion", ColorConversion()},
                      {"encoders", encoders != nullptr ? std::atoi(encoders) : 1},
                      {"overwrite", true},
                      {"encoder", {{"preset", "veryfast"}}}};
  // The job's batch: FRAMEMILL_BENCH_BATCH, else a one-shape package's own (g_fixed_batch, from
  // its card, read once in main), else the job default.
  if (const char* batch = std::getenv("FRAMEMILL_BENCH_BATCH")) {
    j["batch"] = std::atoi(batch);
  } else if (g_fixed_batch > 0) {
    j["batch"] = g_fixed_batch;
  }
  if (g_faces != nullptr) {
    j["mode"] = "faces";
    j["face_table"] = g_faces_path;
    j["face_size"] = g_faces->face_size;
  }
  if (gpus.empty()) {
    j["workers"] = workers;
  } else {
    j["gpus"] = gpus;
    j["workers_per_gpu"] = workers;
  }
  std::ofstream(job) << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Row row{"framemill " + std::to_string(workers) + "w" +
          (gpus.empty() ? "" : "/gpu x" + std::to_string(gpus.size()))};
  double cpu0 = CpuSeconds(RUSAGE_CHILDREN);
  uint64_t t0 = fm::MonotonicMs();
  std::fflush(stdout);  // or the child's freopen would write our buffered lines again
  const std::string out_path = tmp + "/framemill-" + id + ".out";
  pid_t pid = fork();
  if (pid == 0) {
    freopen(out_path.c_str(), "w", stdout);
    freopen((tmp + "/framemill.log").c_str(), "w", stderr);
    execl("./framemill", "framemill", "run", job.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // The supervisor's own peak (VmHWM, sampled: wait4's figure would be the largest of it and
  // the workers it reaped).
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    row.peak_rss_mb = std::max(row.peak_rss_mb, fm::ReadProcMemory(pid).peak_bytes / 1048576.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  row.seconds = (fm::MonotonicMs() - t0) / 1000.0;
  row.cpu_seconds = CpuSeconds(RUSAGE_CHILDREN) - cpu0;
  row.frames = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? frames : 0;
  if (row.frames == 0) {
    // A failed run prints 0 fps: say why, from the job's own last word on stderr.
    std::string reason = "no reason in its log";
    std::ifstream log(tmp + "/framemill.log");
    for (std::string line; std::getline(log, line);) {
      if (line.find("job failed") != std::string::npos) reason = line;
    }
    std::printf("%s: framemill run failed (%s %d): %s\n", row.name.c_str(),
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), reason.c_str());
  }
  // From the job's memory timeline: the largest GPU reservation of any one worker, and each
  // worker's reservation after its first chunk and after its last (flat = no creep).
  std::ifstream timeline(output + ".timeline.jsonl");
  std::map<std::string, std::pair<double, double>> first_last;  // by worker/generation
  for (std::string line; std::getline(timeline, line);) {
    nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    double reserved = e.value("gpu_reserved_mb", 0.0);
    row.peak_gpu_mb = std::max(row.peak_gpu_mb, reserved);
    if (e.value("event", "") != "chunk") continue;
    std::string key =
        std::to_string(e.value("worker", 0)) + "/" + std::to_string(e.value("gen", 0));
    auto it = first_last.find(key);
    if (it == first_last.end())
      first_last[key] = {reserved, reserved};
    else
      it->second.second = reserved;
  }
  for (const auto& [key, fl] : first_last) {
    char part[96];
    std::snprintf(part, sizeof(part), "%sw%s %.0f->%.0f", row.gpu_flat.empty() ? "" : ", ",
                  key.c_str(), fl.first, fl.second);
    row.gpu_flat += part;
  }
  std::ifstream out(out_path);
  for (std::string line; std::getline(out, line);) {
    if (line.find("stages: ") != std::string::npos) {
      row.stages = line.substr(line.find("stages: ") + 8);
      size_t at = row.stages.find("pipeline ");
      if (at != std::string::npos) row.pipeline_seconds = std::atof(row.stages.c_str() + at + 9);
    }
  }
  return row;
}

void Print(const Row& r) {
  std::printf("%-22s %8.1f %10.4f %9.0f %9.0f %8.1f\n", r.name.c_str(), r.fps(),
              r.frames > 0 ? r.cpu_seconds / r.frames : 0.0, r.peak_rss_mb, r.peak_gpu_mb,
              r.seconds);
  // The warm-up framemill's first chunk pays and the model row's fps leaves out.
  if (r.first_call_ms > 0) {
    std::printf("%-22s first call at its shape %.1f ms (warm-up, before the timed calls)\n", "",
                r.first_call_ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: framemill-bench INPUT MODEL DEVICE [WORKERS...]\n");
    return 2;
  }
  std::string input = argv[1], model_path = argv[2], device_name = argv[3];
  std::vector<int> workers;
  for (int i = 4; i < argc; ++i) workers.push_back(std::atoi(argv[i]));
  if (workers.empty()) workers = {1, 2, 4};
  char tmpl[] = "/tmp/framemill-bench-XXXXXX";
  std::string tmp = mkdtemp(tmpl);

  auto media = fm::ProbeOwnFile("ffprobe", input, true);
  if (!media.ok()) {
    std::fprintf(stderr, "%s\n", media.status().ToString().c_str());
    return 1;
  }
  const fm::VideoStreamInfo& v = media->video;
  const char* prec_env = std::getenv("FRAMEMILL_BENCH_PRECISION");
  std::optional<fm::DeviceSetting> device_setting = fm::ParseDevice(device_name);
  std::optional<fm::Precision> precision =
      fm::ParsePrecision(prec_env != nullptr ? prec_env : "fp32");
  if (!device_setting || !precision) {
    std::fprintf(stderr,
                 "DEVICE must be auto, cpu, cuda or cuda:N and "
                 "FRAMEMILL_BENCH_PRECISION fp32, fp16 or bf16\n");
    return 2;
  }
  auto device = fm::ResolveDevice(*device_setting);
  if (!device.ok()) return 1;
  auto dtype = fm::ResolvePrecision(*precision, *device);
  if (!dtype.ok()) {
    std::fprintf(stderr, "%s\n", dtype.status().message().c_str());
    return 1;
  }
  auto model = fm::LoadFrameModel(model_path, *device, *dtype);
  if (!model.ok()) {
    std::fprintf(stderr, "cannot load the model\n");
    return 1;
  }
  g_dtype = *dtype;
  // A package made for one shape takes that shape only (its card): it is probed at it, and the
  // per-frame loops (batch 1) cannot run it.
  int64_t probe_w = 64, probe_h = 64, probe_batch = 1;
  if (fm::Result<std::optional<fm::ModelCard>> card = fm::LoadModelCard(model_path);
      card.ok() && card->has_value()) {
    if ((*card)->fixed_width) {
      probe_w = *(*card)->fixed_width;
      probe_h = *(*card)->fixed_height;
    }
    probe_batch = (*card)->fixed_batch.value_or(1);
    if ((*card)->fixed_batch) g_fixed_batch = *(*card)->fixed_batch;
  }
  auto size = fm::ProbeOutputSize(**model, probe_w, probe_h, probe_batch);
  if (!size.ok()) {
    std::fprintf(stderr, "the model's probe failed: %s\n", size.status().message().c_str());
    return 1;
  }
  int out_w = static_cast<int>(v.width * size->first / probe_w),
      out_h = static_cast<int>(v.height * size->second / probe_h);
  fm::FaceTable faces;
  if (const char* table = std::getenv("FRAMEMILL_BENCH_FACE_TABLE")) {
    fm::Result<fm::FaceTable> read = fm::ReadFaceTable(table);
    fm::Status fits =
        read.ok()
            ? fm::CheckFaceTable(
                  *read, {v.width, v.height, read->face_size, v.frame_count, 0, v.frame_count},
                  table)
            : read.status();
    if (!fits.ok()) {
      std::fprintf(stderr, "%s\n", fits.ToString().c_str());
      return 1;
    }
    faces = std::move(*read);
    g_faces = &faces;
    g_faces_path = std::filesystem::absolute(table).string();
    out_w = v.width;  // face mode pastes the faces back into the input's frames
    out_h = v.height;
    std::printf(
        "face mode: %s, face_size %d, %lld faces in %zu frames (%.2f a frame); detection "
        "where the table was made: %.1f ms a frame on %d threads (not in the rows below)\n",
        table, faces.face_size, static_cast<long long>(faces.stats.faces_found),
        faces.frames.size(),
        static_cast<double>(faces.stats.faces_found) /
            static_cast<double>(std::max<size_t>(1, faces.frames.size())),
        faces.stats.detection_ms_per_frame, faces.stats.threads);
  }
  std::printf("input %s: %lld frames %dx%d -> %dx%d; model %s on %s; %u CPU threads\n",
              input.c_str(), static_cast<long long>(v.frame_count), v.width, v.height, out_w, out_h,
              model_path.c_str(), device->str().c_str(), std::thread::hardware_concurrency());
  if (device->is_cuda()) {
    std::printf("cuDNN autotuning: %s in framemill's workers, on in the model row\n",
                CudnnAutotune() ? "on" : "off");
  }
  std::printf("%-22s %8s %10s %9s %9s %8s\n", "run", "fps", "cpu s/fr", "rss MiB", "gpu MiB",
              "seconds");
  // framemill first: the in-process runs grow this process's peak RSS, which fork would inherit
  // as a starting point for nothing (ru_maxrss of the child is its own).
  std::vector<Row> fm_rows;
  for (int w : workers)
    fm_rows.push_back(Framemill(input, model_path, device_name, w, {}, v.frame_count, tmp));
  // $FRAMEMILL_BENCH_GPUS ("0,1"): the same worker counts per GPU, on each of these GPUs.
  std::vector<int> gpus;
  if (const char* g = std::getenv("FRAMEMILL_BENCH_GPUS")) {
    std::istringstream list(g);
    for (std::string x; std::getline(list, x, ',');) gpus.push_back(std::atoi(x.c_str()));
  }
  if (!gpus.empty()) {
    for (int w : workers)
      fm_rows.push_back(Framemill(input, model_path, "cuda", w, gpus, v.frame_count, tmp));
  }
  const char* baselines_env = std::getenv("FRAMEMILL_BENCH_BASELINES");
  const bool baselines = baselines_env == nullptr || std::string(baselines_env) != "0";
  Row naive{"naive"}, naive_ec{"naive+empty_cache"}, transcode{"transcode"}, model_only{"model"};
  double sustained_fps = 0;
  if (baselines) {
    if (probe_batch == 1) {
      naive = Loop("naive", input, v, model->get(), out_w, out_h, false, tmp);
      naive_ec = Loop("naive+empty_cache", input, v, model->get(), out_w, out_h, true, tmp);
    } else {
      std::printf("naive: not run: the model takes batches of exactly %lld (its card)\n",
                  static_cast<long long>(probe_batch));
    }
    transcode = Loop("transcode", input, v, nullptr, v.width, v.height, false, tmp);
#ifdef FRAMEMILL_WITH_CUDA
    // The compute limit is the model at its fastest: with the cuDNN autotuning framemill's
    // workers use (the naive loops above run as today's loops do, without it).
    if (device->is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
#endif
    // As loaded (TorchScript as the file has it), then frozen and optimized for inference
    // (model_optimization on): the faster of the two is the model at its best.
    model_only = ModelOnly(input, v, **model, tmp);
    auto frozen = fm::LoadFrameModel(model_path, *device, *dtype, fm::ModelOptimization::kOn);
    bool frozen_best = false;
    if (frozen.ok()) {
      Row r = ModelOnly(input, v, **frozen, tmp, ", frozen");
      if (r.fps() > model_only.fps()) {
        model_only = r;
        frozen_best = true;
      }
    }
    for (const Row& r : {naive, naive_ec, transcode, model_only}) Print(r);
    // $FRAMEMILL_BENCH_MODEL_SECONDS (default 10 on CUDA, 0 on the CPU): the model row's
    // settings again for that long, for the rate a long job's worker can reach.
    const char* sustain_env = std::getenv("FRAMEMILL_BENCH_MODEL_SECONDS");
    const double sustain =
        sustain_env != nullptr ? std::atof(sustain_env) : (device->is_cuda() ? 10.0 : 0.0);
    // (Not in face mode, whose model row counts frames at the table's faces per frame.)
    if (sustain > 0 && model_only.batch > 0 && g_faces == nullptr) {
      double first = 0;
      sustained_fps = ModelSustained(input, v, frozen_best ? **frozen : **model, tmp, model_only,
                                     sustain, &first);
      std::printf(
          "%-22s %8.1f fps sustained over %.0f s at its settings (%.1f in the first "
          "second)\n",
          "model", sustained_fps, sustain, first);
    }
  }
  Row best = fm_rows.front();
  for (const Row& r : fm_rows) {
    Print(r);
    if (r.fps() > best.fps()) best = r;
  }
  double limit = std::min(transcode.fps(), model_only.fps());
  if (baselines) {
    std::printf(
        "ratios: %s / min(transcode, model) = %.2f; %s / naive = %.2f; "
        "cpu s/frame %s / naive = %.2f\n",
        best.name.c_str(), limit > 0 ? best.fps() / limit : 0.0, best.name.c_str(),
        naive.fps() > 0 ? best.fps() / naive.fps() : 0.0, best.name.c_str(),
        naive.cpu_seconds > 0
            ? (best.cpu_seconds / best.frames) / (naive.cpu_seconds / naive.frames)
            : 0.0);
  }
  // Several GPUs against one: each multi-GPU row over the one-device row of as many workers.
  for (size_t i = 0; !gpus.empty() && i < workers.size(); ++i) {
    const Row& one = fm_rows[i];
    const Row& many = fm_rows[workers.size() + i];
    if (one.frames == 0 || many.frames == 0 || one.pipeline_seconds <= 0 ||
        many.pipeline_seconds <= 0)
      continue;
    std::printf("gpus: %s / %s = %.2f whole job, %.2f steady state\n", many.name.c_str(),
                one.name.c_str(), many.fps() / one.fps(),
                one.pipeline_seconds / many.pipeline_seconds);
  }
  // A long job's rate: the pipeline alone, without the fixed seconds of start-up and mux.
  for (const Row& r : fm_rows) {
    if (r.pipeline_seconds <= 0 || r.frames == 0) continue;
    double fps = r.frames / r.pipeline_seconds;
    std::printf("steady state: %s pipeline %.1f fps", r.name.c_str(), fps);
    if (baselines)
      std::printf(" = %.2f of min(transcode, model), %.2fx naive", limit > 0 ? fps / limit : 0.0,
                  naive.fps() > 0 ? fps / naive.fps() : 0.0);
    if (sustained_fps > 0) std::printf(", %.2f of the model sustained", fps / sustained_fps);
    std::printf("\n");
  }
  for (const Row& r : fm_rows) std::printf("%s stages: %s\n", r.name.c_str(), r.stages.c_str());
  for (const Row& r : fm_rows) {
    if (r.peak_gpu_mb > 0)
      std::printf("%s GPU reserved MiB per worker, first chunk -> last: %s\n", r.name.c_str(),
                  r.gpu_flat.c_str());
  }
  if (std::getenv("FRAMEMILL_BENCH_KEEP") != nullptr) {
    std::printf("kept: %s\n", tmp.c_str());
    return 0;
  }
  std::string cleanup = "rm -rf '" + tmp + "'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
