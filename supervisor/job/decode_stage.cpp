#include "supervisor/job/decode_stage.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/log.h"
#include "common/clock.h"
#include "supervisor/media/color_path.h"
#include "supervisor/job/supervisor_hooks.h"
#include "supervisor/media/decode_seek.h"

namespace framemill {
namespace {

bool IsCrash(const Status& s) { return s.code() == StatusCode::kDecoderCrashed; }

}  // namespace

DecodeStage::DecodeStage(DecodeSetup setup, JobArena* arena, const std::atomic<Dispatcher*>* wake,
                         const std::atomic<uint64_t>* pipeline_start_us)
    : s_(std::move(setup)),
      p_(*s_.prepared),
      arena_(*arena),
      wake_(*wake),
      pipeline_start_us_(*pipeline_start_us) {
  figures_.restarts = s_.restarts_used;
}

void DecodeStage::Run() {
  try {
    Loop();
  } catch (const std::exception& e) {
    arena_.board->Fail(Status(StatusCode::kInternal, std::string("decoder thread: ") + e.what()));
  }
}

std::vector<std::string> DecodeStage::Filters() const {
  std::vector<std::string> filters = p_.geometry_filters;
  for (const std::string& f : ColorFilters(p_.color_path, s_.in_format,
                                           s_.conversion == ColorConversion::kAccurate)) {
    filters.push_back(f);
  }
  return filters;
}

// Starts ffmpeg on the source at frame `skip`: a keyframe seek and a drop by timestamp
// (decode_seek.h), or, for a video without timestamps, by dropping the first `skip` frames
// here. A part's decoder stops by itself after the part's last frame.
Status DecodeStage::Start(int64_t skip) {
  reader_.reset();  // a crashed one is reaped here
  const int64_t end_frame = s_.range.end_chunk < static_cast<int64_t>(p_.plan.chunks.size())
                                ? p_.plan.chunks[s_.range.end_chunk].first_frame
                                : 0;
  DecodeSeek seek = SeekFor(p_.media.video, p_.media.start_time, skip, 0);
  const int64_t from = seek.seeks() ? skip : 0;
  if (end_frame > 0) seek.max_frames = end_frame - from;
  if (seek.seeks()) {
    spdlog::info(
        "decoder: frame {} on, seeking to {:.3f} s and dropping frames shown before {:.6f} s",
        skip, seek.input_seek_s, seek.trim_start_s);
  }
  Result<std::unique_ptr<FrameReader>> reader = FrameReader::Start(
      s_.config->ffmpeg, p_.source, p_.media.video, s_.scratch + "/decoder.log", s_.in_format,
      Filters(), s_.conversion == ColorConversion::kAccurate, seek);
  if (!reader.ok()) return reader.status();
  reader_ = std::move(*reader);
  next_frame_ = from;
  std::vector<uint8_t> discard(arena_.geometry.InFrameBytes());
  while (next_frame_ < skip) {
    if (arena_.board->failed()) return Status(StatusCode::kCancelled, "the job failed elsewhere");
    Result<bool> got = reader_->Read(discard.data());
    if (!got.ok()) return got.status();
    if (!*got) {
      Status finished = reader_->Finish();
      if (IsCrash(finished)) return finished;
      figures_.ended_short = true;
      return Status(StatusCode::kInputInvalid,
                    "decoding ended after " + std::to_string(next_frame_) + " frames of the " +
                        std::to_string(skip) + " to skip" +
                        (finished.ok() ? "" : "; " + finished.message()));
    }
    ++next_frame_;
  }
  return Status::Ok();
}

// The next frame into `dst`: true, or false at the end of the stream. A decoder that crashed
// (killed by a signal) is started again, up to decoder_restarts times, and resumes at the frame
// it stopped at. One that exits with an error before the last frame is tried once more at that
// frame: stopping there again makes it bad input (false, for Finish to report), getting past it
// makes it a crash survived. An error exit at the end is left for Finish to report.
Result<bool> DecodeStage::ReadFrame(uint8_t* dst) {
  const int64_t frame_count = p_.plan.frame_count;
  for (;;) {
    if (const int sig = InstalledSupervisorHooks().DecoderSignalAt(next_frame_); sig != 0) {
      spdlog::warn("fault hook: sending the decoder signal {} before frame {}", sig, next_frame_);
      reader_->KillForTest(sig);
    }
    Result<bool> got = reader_->Read(dst);
    Status failure;
    if (got.ok() && *got) {
      ++next_frame_;
      return true;
    }
    const bool budget = figures_.restarts < s_.config->decoder_restarts;
    if (got.ok()) {
      failure = reader_->Finish();
      // An error exit before the frames the packets promise: bad input if a second decoder
      // stops at this very frame too, a crash if it gets past it. Tried once per frame.
      const bool suspect = !failure.ok() && !IsCrash(failure) && budget &&
                           next_frame_ < frame_count && next_frame_ != error_retried_at_;
      if (!IsCrash(failure) && !suspect) return false;
      if (suspect) {
        error_retried_at_ = next_frame_;
        failure = Status(StatusCode::kDecoderCrashed,
                         "ffmpeg decoder failed before frame " + std::to_string(next_frame_) +
                             " of " + std::to_string(frame_count) + " (" + failure.message() +
                             "); trying once more to tell a crash from bad input");
      }
    } else {
      failure = got.status();
    }
    if (!IsCrash(failure) || !budget) return failure;
    ++figures_.restarts;
    figures_.faults.push_back(failure.message());
    spdlog::warn("{}: {}; restarting the decoder at frame {} (restart {} of {})", s_.input,
                 failure.ToString(), next_frame_, figures_.restarts, s_.config->decoder_restarts);
    const int64_t resume_at = next_frame_;
    Status restarted = Start(resume_at);
    if (!restarted.ok()) return restarted;
  }
}

void DecodeStage::Fail(const Status& s) {
  reader_.reset();  // kills and reaps the decoder now, not when the stage goes
  arena_.board->Fail(s);
}

void DecodeStage::Account(uint64_t from, double* pipeline, double* early) const {
  const uint64_t now = MonotonicUs();
  const uint64_t p = pipeline_start_us_.load(std::memory_order_acquire);
  const uint64_t split = p == 0 ? now : std::clamp(p, from, now);
  if (early != nullptr) *early += static_cast<double>(split - from) / 1e6;
  *pipeline += static_cast<double>(now - split) / 1e6;
}

// Chunk `c` into a free slot: true, or false when no slot comes (the job ended elsewhere).
Result<bool> DecodeStage::DecodeChunk(int64_t c, std::vector<bool>* reserved) {
  const ChunkPlan& chunk = p_.plan.chunks[c];
  const size_t frame_bytes = arena_.geometry.InFrameBytes();
  const uint64_t t_wait = MonotonicUs();
  std::optional<uint32_t> slot = arena_.board->AcquireSlot();
  const uint64_t t_read = MonotonicUs();
  Account(t_wait, &figures_.decode_wait_s, nullptr);  // waiting for the workers: the start's
  if (!slot) return false;
  if (!(*reserved)[*slot]) {
    // Its pages, before anything touches them (CreateFrameArena); a no-op where they are.
    const auto [offset, bytes] = ArenaSlotRange(arena_.geometry, *slot);
    FM_RETURN_IF_ERROR(arena_.shm.Reserve(offset, bytes));
    (*reserved)[*slot] = true;
  }
  uint8_t* dst = arena_.geometry.SlotIn(arena_.base, *slot);
  for (int32_t f = 0; f < chunk.frames; ++f) {
    Result<bool> got = ReadFrame(dst + f * frame_bytes);
    if (!got.ok()) return got.status().WithContext(s_.input);
    if (!*got) {
      Status finished = reader_->Finish();
      figures_.ended_short = true;
      return Status(StatusCode::kInputInvalid,
                    s_.input + ": decoding ended after " + std::to_string(next_frame_) + " of " +
                        std::to_string(p_.media.video.frame_count) +
                        " frames (truncated or corrupt input)" +
                        (finished.ok() ? "" : "; " + finished.message()));
    }
  }
  if (s_.faces != nullptr) WriteChunkFaces(chunk.first_frame, chunk.frames, *slot);
  Account(t_read, &figures_.decode_s, &figures_.decode_early_s);
  arena_.board->MarkDecoded(chunk.index, *slot);
  return true;
}

void DecodeStage::Loop() {
  const RenderRange& r = s_.range;
  if (r.first_chunk >= r.end_chunk) return;  // every segment already finished: nothing to decode
  Status started = Start(p_.plan.chunks[r.first_chunk].first_frame);
  if (!started.ok()) return Fail(started.WithContext(s_.input + " (skipping finished segments)"));
  std::vector<bool> reserved(arena_.geometry.slot_count, false);  // by this loop
  for (int64_t c = r.first_chunk; c < r.end_chunk; ++c) {
    Result<bool> decoded = DecodeChunk(c, &reserved);
    if (!decoded.ok()) return Fail(decoded.status());
    if (!*decoded) return reader_.reset();
    if (c == r.first_chunk) spdlog::info("decoder: chunk {} ready", c);
    // Before the dispatcher exists (an early decoder) nothing waits: its Run finds the chunks.
    if (Dispatcher* d = wake_.load(std::memory_order_acquire)) d->Wake();
  }
  std::vector<uint8_t> extra(arena_.geometry.InFrameBytes());
  // A part that ends before the video does: its decoder stopped at the part's last frame.
  Result<bool> more = ReadFrame(extra.data());
  if (more.ok() && *more && r.end_chunk == static_cast<int64_t>(p_.plan.chunks.size())) {
    return Fail(Status(StatusCode::kInputInvalid,
                       s_.input + ": decoder gives more frames than the " +
                           std::to_string(p_.media.video.frame_count) + " its packets promise"));
  }
  Status finished = more.ok() ? reader_->Finish() : more.status();
  if (!finished.ok()) return Fail(finished.WithContext(s_.input));
  reader_.reset();
}

void DecodeStage::WriteChunkFaces(int64_t first, int32_t frames, uint32_t slot) {
  const FaceTable& faces = *s_.faces;
  FaceWarp* dst = arena_.geometry.SlotFaces(arena_.base, slot);
  const uint32_t per_frame = arena_.geometry.face_slots;
  std::memset(dst, 0, sizeof(FaceWarp) * per_frame * static_cast<size_t>(frames));
  for (int32_t f = 0; f < frames; ++f) {
    const int64_t row = first + f - faces.first_frame;
    if (row < 0 || row >= static_cast<int64_t>(faces.frames.size())) continue;
    const std::vector<FaceWarp>& in = faces.frames[static_cast<size_t>(row)];
    // A table's warps are present ones (face_align.h, face_table.h), largest first.
    std::copy_n(in.begin(), std::min<size_t>(in.size(), per_frame),
                dst + static_cast<size_t>(f) * per_frame);
  }
}

}  // namespace framemill
