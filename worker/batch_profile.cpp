#include "worker/batch_profile.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log_lines.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace framemill {

#ifdef FRAMEMILL_WITH_CUDA
namespace {
constexpr int kMarks = static_cast<int>(ProfileMark::kCount);
// Milliseconds between two recorded events, 0 when either was not recorded.
double Between(at::cuda::CUDAEvent& a, at::cuda::CUDAEvent& b) {
  if (!a.isCreated() || !b.isCreated()) return 0;
  return static_cast<double>(a.elapsed_time(b));
}
}  // namespace

struct BatchProfile::State {
  // One set of events per batch of the current chunk (grown, never shrunk).
  std::vector<std::array<at::cuda::CUDAEvent, kMarks>> events;
  int64_t batches = 0;
  uint64_t chunk_start_us = 0, last_end_us = 0;
  // Sums since the last report, in ms.
  double upload = 0, to_model = 0, model = 0, from_model = 0, download = 0;
  double span = 0, wall = 0, between = 0;
  int64_t frames = 0, chunks = 0;
};

BatchProfile::BatchProfile() {
  const char* v = std::getenv("FRAMEMILL_WORKER_PROFILE");
  if (v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0) state_ = std::make_unique<State>();
}

BatchProfile::~BatchProfile() {
  if (state_ != nullptr && state_->chunks > 0) Report();
}

void BatchProfile::BeginChunk(int64_t batches) {
  if (state_ == nullptr) return;
  State& s = *state_;
  s.chunk_start_us = MonotonicUs();
  if (s.last_end_us != 0) s.between += (s.chunk_start_us - s.last_end_us) / 1000.0;
  s.batches = batches;
  while (static_cast<int64_t>(s.events.size()) < batches) {
    s.events.emplace_back();
    for (auto& e : s.events.back()) e = at::cuda::CUDAEvent(cudaEventDefault);  // timing on
  }
}

void BatchProfile::Mark(int64_t batch, ProfileMark mark) {
  if (state_ == nullptr || batch >= state_->batches) return;
  state_->events[batch][static_cast<int>(mark)].record();
}

void BatchProfile::EndChunk(int64_t frames) {
  if (state_ == nullptr) return;
  State& s = *state_;
  auto at = [&](int64_t b, ProfileMark m) -> at::cuda::CUDAEvent& {
    return s.events[b][static_cast<int>(m)];
  };
  for (int64_t b = 0; b < s.batches; ++b) {
    s.upload += Between(at(b, ProfileMark::kUploadStart), at(b, ProfileMark::kUploadEnd));
    s.to_model += Between(at(b, ProfileMark::kToModelStart), at(b, ProfileMark::kModelStart));
    s.model += Between(at(b, ProfileMark::kModelStart), at(b, ProfileMark::kModelEnd));
    s.from_model += Between(at(b, ProfileMark::kModelEnd), at(b, ProfileMark::kFromModelEnd));
    s.download += Between(at(b, ProfileMark::kDownloadStart), at(b, ProfileMark::kDownloadEnd));
  }
  if (s.batches > 0) {
    s.span += Between(at(0, ProfileMark::kUploadStart), at(s.batches - 1, ProfileMark::kDownloadEnd));
  }
  s.last_end_us = MonotonicUs();
  s.wall += (s.last_end_us - s.chunk_start_us) / 1000.0;
  s.frames += frames;
  if (++s.chunks % kReportEvery == 0) Report();
}

void BatchProfile::Report() {
  State& s = *state_;
  if (s.frames == 0) return;
  const double f = static_cast<double>(s.frames);
  char line[512];
  std::snprintf(line, sizeof line,
                "profile: %lld frames, per frame ms: upload %.3f, to_model %.3f, model %.3f, "
                "from_model %.3f, download %.3f; chunk span %.3f, chunk wall %.3f, between "
                "chunks %.3f",
                static_cast<long long>(s.frames), s.upload / f, s.to_model / f, s.model / f,
                s.from_model / f, s.download / f, s.span / f, s.wall / f, s.between / f);
  LogInfo(line);
  const int64_t chunks = s.chunks;
  const uint64_t last_end = s.last_end_us;
  auto events = std::move(s.events);
  s = State();
  s.events = std::move(events);
  s.chunks = chunks;
  s.last_end_us = last_end;
}

#else  // no CUDA: nothing to time

struct BatchProfile::State {};
BatchProfile::BatchProfile() = default;
BatchProfile::~BatchProfile() = default;
void BatchProfile::BeginChunk(int64_t) {}
void BatchProfile::Mark(int64_t, ProfileMark) {}
void BatchProfile::EndChunk(int64_t) {}
void BatchProfile::Report() {}

#endif

}  // namespace framemill
