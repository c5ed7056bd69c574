#include "worker/batch_profile.h"

#include <array>
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
namespace {
constexpr int kMarks = static_cast<int>(ProfileMark::kCount);
}  // namespace

struct BatchProfile::State {
  bool on_device = false;
#ifdef FRAMEMILL_WITH_CUDA
  // One set of events per batch of the current chunk (grown, never shrunk).
  std::vector<std::array<at::cuda::CUDAEvent, kMarks>> events;
#endif
  // On the host: each batch's marks in µs, 0 = not recorded.
  std::vector<std::array<uint64_t, kMarks>> host;
  int64_t batches = 0;
  uint64_t chunk_start_us = 0, last_end_us = 0;
  double between = 0;    // ms before the current chunk
  double host_copy = 0;  // ms of the current chunk's staged copies on the host
  bool first_reported = false;
  ProfileSums sums;

  bool Recorded(int64_t b, ProfileMark m) const {
#ifdef FRAMEMILL_WITH_CUDA
    if (on_device) return events[b][static_cast<int>(m)].isCreated();
#endif
    return host[b][static_cast<int>(m)] != 0;
  }
  // Milliseconds from mark `a` of batch `ba` to mark `z` of batch `bz`, 0 when either was not
  // recorded.
  double Between(int64_t ba, ProfileMark a, int64_t bz, ProfileMark z) {
    if (!Recorded(ba, a) || !Recorded(bz, z)) return 0;
#ifdef FRAMEMILL_WITH_CUDA
    if (on_device) {
      return static_cast<double>(
          events[ba][static_cast<int>(a)].elapsed_time(events[bz][static_cast<int>(z)]));
    }
#endif
    return static_cast<double>(host[bz][static_cast<int>(z)] - host[ba][static_cast<int>(a)]) /
           1000.0;
  }
};

bool BatchProfile::EnabledByEnvironment() {
  const char* v = std::getenv("FRAMEMILL_WORKER_PROFILE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

BatchProfile::BatchProfile(bool on_device, bool enabled) {
#ifndef FRAMEMILL_WITH_CUDA
  if (on_device) return;  // no device events to record
#endif
  if (!enabled) return;
  state_ = std::make_unique<State>();
  state_->on_device = on_device;
}

BatchProfile::~BatchProfile() {
  if (state_ == nullptr) return;
  if (state_->sums.later().chunks > 0 ||
      (!state_->first_reported && state_->sums.first().chunks > 0)) {
    Report();
  }
}

const ProfileSums* BatchProfile::sums() const {
  return state_ == nullptr ? nullptr : &state_->sums;
}

void BatchProfile::BeginChunk(int64_t batches) {
  if (state_ == nullptr) return;
  State& s = *state_;
  s.chunk_start_us = MonotonicUs();
  s.between = s.last_end_us != 0 ? (s.chunk_start_us - s.last_end_us) / 1000.0 : 0.0;
  s.batches = batches;
  s.host_copy = 0;
#ifdef FRAMEMILL_WITH_CUDA
  if (s.on_device) {
    while (static_cast<int64_t>(s.events.size()) < batches) {
      s.events.emplace_back();
      for (auto& e : s.events.back()) e = at::cuda::CUDAEvent(cudaEventDefault);  // timing on
    }
    return;
  }
#endif
  s.host.assign(static_cast<size_t>(batches), {});
}

void BatchProfile::Mark(int64_t batch, ProfileMark mark) {
  if (state_ == nullptr || batch >= state_->batches) return;
#ifdef FRAMEMILL_WITH_CUDA
  if (state_->on_device) {
    state_->events[batch][static_cast<int>(mark)].record();
    return;
  }
#endif
  state_->host[batch][static_cast<int>(mark)] = MonotonicUs();
}

void BatchProfile::AddHostCopy(double ms) {
  if (state_ != nullptr) state_->host_copy += ms;
}

void BatchProfile::EndChunk(int64_t frames) {
  if (state_ == nullptr) return;
  State& s = *state_;
  using M = ProfileMark;
  StageSums chunk;
  for (int64_t b = 0; b < s.batches; ++b) {
    chunk.upload += s.Between(b, M::kUploadStart, b, M::kUploadEnd);
    chunk.to_model += s.Between(b, M::kToModelStart, b, M::kModelStart);
    chunk.model += s.Between(b, M::kModelStart, b, M::kModelEnd);
    chunk.from_model += s.Between(b, M::kModelEnd, b, M::kFromModelEnd);
    chunk.download += s.Between(b, M::kDownloadStart, b, M::kDownloadEnd);
  }
  if (s.batches > 0) {
    // On the CPU there is no upload or download: the span runs from conversion to conversion.
    const int64_t last = s.batches - 1;
    const M begin = s.Recorded(0, M::kUploadStart) ? M::kUploadStart : M::kToModelStart;
    const M end = s.Recorded(last, M::kDownloadEnd) ? M::kDownloadEnd : M::kFromModelEnd;
    chunk.span = s.Between(0, begin, last, end);
  }
  s.last_end_us = MonotonicUs();
  chunk.wall = (s.last_end_us - s.chunk_start_us) / 1000.0;
  chunk.between = s.between;
  chunk.host_copy = s.host_copy;
  chunk.frames = frames;
  s.sums.AddChunk(chunk);
  if (s.sums.later().chunks >= kReportEvery) Report();
}

void BatchProfile::Report() {
  State& s = *state_;
  LogInfo(s.sums.Line());
  s.first_reported = true;
  s.sums.ClearLater();
}

}  // namespace framemill
