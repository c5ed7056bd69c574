#include "worker/batch/batch_profile.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/env_knobs.h"
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
  // One chunk's marks. Two chunks may be open at once: one whose output is still being downloaded
  // while the next one runs (batch_runner.h, "Chunks back to back").
  struct Chunk {
#ifdef FRAMEMILL_WITH_CUDA
    // One set of events per batch (grown, never shrunk).
    std::vector<std::array<at::cuda::CUDAEvent, kMarks>> events;
#endif
    // On the host: each batch's marks in µs, 0 = not recorded.
    std::vector<std::array<uint64_t, kMarks>> host;
    int64_t batches = 0;
    uint64_t start_us = 0;
    double between = 0;    // ms before the chunk (0 when it started beside an open one)
    double host_copy = 0;  // ms of the chunk's staged copies on the host
  };
  bool on_device = false;
  std::array<Chunk, 2> chunks;
  int oldest = 0, open = 0;  // the open chunks: chunks[oldest], then chunks[(oldest + 1) % 2]
  // The last ended chunk's last output conversion (kFromModelEnd of its last batch), for the fed
  // period (profile_sums.h): taken out of its chunk, whose slot the next chunks reuse.
  bool have_prev_end = false;
#ifdef FRAMEMILL_WITH_CUDA
  // Timing on, as every event of a chunk: swapped into a chunk's slot, it is recorded there next.
  at::cuda::CUDAEvent prev_end{cudaEventDefault};
#endif
  uint64_t prev_end_host = 0;
  uint64_t last_end_us = 0;
  bool first_reported = false;
  ProfileSums sums;

  Chunk& Newest() { return chunks[(oldest + open - 1) % 2]; }

#ifdef FRAMEMILL_WITH_CUDA
  // Milliseconds from `a` to `z`; 0 where torch refuses (an event without timing, not recorded):
  // a diagnostic must not take the worker down.
  static double Elapsed(const at::cuda::CUDAEvent& a, const at::cuda::CUDAEvent& z) {
    try {
      return static_cast<double>(a.elapsed_time(z));
    } catch (const std::exception&) {
      return 0;
    }
  }
#endif

  bool Recorded(const Chunk& c, int64_t b, ProfileMark m) const {
#ifdef FRAMEMILL_WITH_CUDA
    if (on_device) return c.events[b][static_cast<int>(m)].isCreated();
#endif
    return c.host[b][static_cast<int>(m)] != 0;
  }
  // Milliseconds from mark `a` of batch `ba` to mark `z` of batch `bz` of chunk `c`, 0 when
  // either was not recorded.
  double Between(Chunk& c, int64_t ba, ProfileMark a, int64_t bz, ProfileMark z) {
    if (!Recorded(c, ba, a) || !Recorded(c, bz, z)) return 0;
#ifdef FRAMEMILL_WITH_CUDA
    if (on_device) {
      return Elapsed(c.events[ba][static_cast<int>(a)], c.events[bz][static_cast<int>(z)]);
    }
#endif
    return static_cast<double>(c.host[bz][static_cast<int>(z)] - c.host[ba][static_cast<int>(a)]) /
           1000.0;
  }
};

bool BatchProfile::EnabledByEnvironment() {
  const std::optional<std::string>& v = Knob(EnvKnob::kWorkerProfile);
  return v && !v->empty() && *v != "0";
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
  if (s.open == 2) {  // (a caller that never ended one: the older is dropped)
    s.oldest = (s.oldest + 1) % 2;
    s.open = 1;
  }
  ++s.open;
  State::Chunk& c = s.Newest();
  c.start_us = MonotonicUs();
  // Time between chunks is the host's wait for work; a chunk started while the one before is
  // still open did not wait.
  c.between = s.open == 1 && s.last_end_us != 0 ? (c.start_us - s.last_end_us) / 1000.0 : 0.0;
  c.batches = batches;
  c.host_copy = 0;
#ifdef FRAMEMILL_WITH_CUDA
  if (s.on_device) {
    while (static_cast<int64_t>(c.events.size()) < batches) {
      c.events.emplace_back();
      for (auto& e : c.events.back()) e = at::cuda::CUDAEvent(cudaEventDefault);  // timing on
    }
    return;
  }
#endif
  c.host.assign(static_cast<size_t>(batches), {});
}

void BatchProfile::Mark(int64_t batch, ProfileMark mark) {
  if (state_ == nullptr || state_->open == 0) return;
  State::Chunk& c = state_->Newest();
  if (batch >= c.batches) return;
#ifdef FRAMEMILL_WITH_CUDA
  if (state_->on_device) {
    c.events[batch][static_cast<int>(mark)].record();
    return;
  }
#endif
  c.host[batch][static_cast<int>(mark)] = MonotonicUs();
}

void BatchProfile::AddHostCopy(double ms) {
  if (state_ != nullptr && state_->open > 0) state_->Newest().host_copy += ms;
}

void BatchProfile::AbandonChunk(bool oldest) {
  if (state_ == nullptr || state_->open == 0) return;
  state_->have_prev_end = false;  // the next period would count the failed chunk's work
  if (oldest) state_->oldest = (state_->oldest + 1) % 2;
  --state_->open;
}

void BatchProfile::EndChunk(int64_t frames) {
  if (state_ == nullptr || state_->open == 0) return;
  State& s = *state_;
  State::Chunk& c = s.chunks[s.oldest];
  s.oldest = (s.oldest + 1) % 2;
  --s.open;
  using M = ProfileMark;
  StageSums chunk;
  for (int64_t b = 0; b < c.batches; ++b) {
    chunk.upload += s.Between(c, b, M::kUploadStart, b, M::kUploadEnd);
    chunk.to_model += s.Between(c, b, M::kToModelStart, b, M::kModelStart);
    chunk.model += s.Between(c, b, M::kModelStart, b, M::kModelEnd);
    chunk.from_model += s.Between(c, b, M::kModelEnd, b, M::kFromModelEnd);
    chunk.download += s.Between(c, b, M::kDownloadStart, b, M::kDownloadEnd);
  }
  if (c.batches > 0) {
    // On the CPU there is no upload or download: the span runs from conversion to conversion.
    const int64_t last = c.batches - 1;
    const M begin = s.Recorded(c, 0, M::kUploadStart) ? M::kUploadStart : M::kToModelStart;
    const M end = s.Recorded(c, last, M::kDownloadEnd) ? M::kDownloadEnd : M::kFromModelEnd;
    chunk.span = s.Between(c, 0, begin, last, end);
    // Fed: it started beside the chunk before, or less than this after that one ended.
    constexpr double kFedMs = 1.0;
    const int lm = static_cast<int>(M::kFromModelEnd);
    if (s.Recorded(c, last, M::kFromModelEnd)) {
      const bool fed = s.have_prev_end && c.between < kFedMs;
      if (fed) chunk.fed_frames = frames;
#ifdef FRAMEMILL_WITH_CUDA
      if (s.on_device) {
        if (fed) chunk.fed_period = State::Elapsed(s.prev_end, c.events[last][lm]);
        std::swap(s.prev_end, c.events[last][lm]);
      }
#endif
      if (!s.on_device) {
        if (fed) chunk.fed_period = static_cast<double>(c.host[last][lm] - s.prev_end_host) / 1000.0;
        s.prev_end_host = c.host[last][lm];
      }
      s.have_prev_end = true;
    } else {
      s.have_prev_end = false;
    }
  }
  s.last_end_us = MonotonicUs();
  chunk.wall = (s.last_end_us - c.start_us) / 1000.0;
  chunk.between = c.between;
  chunk.host_copy = c.host_copy;
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
