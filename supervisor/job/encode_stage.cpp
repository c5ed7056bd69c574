#include "supervisor/job/encode_stage.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/mutex.h"
#include "supervisor/job/supervisor_hooks.h"

namespace framemill {
namespace {

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

}  // namespace

void EncodeStage::Start() {
  running_.store(s_.encoders);
  for (int e = 0; e < s_.encoders; ++e) {
    threads_.emplace_back([this, e] {
      try {
        Loop(e);
      } catch (const std::exception& ex) {
        arena_.board->Fail(
            Status(StatusCode::kInternal, std::string("encoder thread: ") + ex.what()));
      }
      running_.fetch_sub(1);
    });
  }
}

void EncodeStage::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void EncodeStage::Loop(int encoder) {
  double busy_s = 0, wait_s = 0;
  const RenderRange& r = s_.range;
  for (int64_t si = r.seg_begin + s_.state->resumed() + encoder; si < r.seg_end;
       si += s_.encoders) {
    Status s = EncodeSegment(s_.plan->segments[si], encoder, &busy_s, &wait_s);
    if (!s.ok()) {
      arena_.board->Fail(s.WithContext("segment " + std::to_string(si)));
      break;
    }
    if (arena_.board->failed()) break;
  }
  MutexLock lock(&mu_);
  busy_s_ += busy_s;
  wait_s_ += wait_s;
}

// The segment's chunks into `enc` as the workers finish them. `*ended`: the job failed
// elsewhere (the encoder is left to be killed).
Status EncodeStage::WriteChunks(const SegmentPlan& seg, SegmentEncoder* enc, double* busy_s,
                                double* wait_s, bool* ended) {
  const ArenaGeometry& g = arena_.geometry;
  ChunkBoard& board = *arena_.board;
  for (int64_t c = seg.first_chunk; c < seg.first_chunk + seg.chunk_count; ++c) {
    const uint64_t t_wait = MonotonicUs();
    if (!board.WaitProcessed(c)) {
      *ended = true;
      return Status::Ok();
    }
    const uint64_t t_write = MonotonicUs();
    *wait_s += Seconds(t_wait, t_write);
    const ChunkPlan& chunk = s_.plan->chunks[c];
    const uint32_t slot = board.SlotOf(c);
    FM_RETURN_IF_ERROR(enc->Write(g.SlotOut(arena_.base, slot), g.OutFrameBytes() * chunk.frames));
    if (s_.stills->Wants(c)) s_.stills->Capture(c, g.SlotIn(arena_.base, slot), g.SlotOut(arena_.base, slot));
    board.ReleaseSlot(c);
    frames_written_.fetch_add(chunk.frames);
    if (InstalledSupervisorHooks().KillEncoderAt(seg.index)) {
      spdlog::warn("fault hook: killing the encoder of segment {}", seg.index);
      enc->KillForTest();
    }
    *busy_s += Seconds(t_write, MonotonicUs());
  }
  return Status::Ok();
}

Status EncodeStage::EncodeSegment(const SegmentPlan& seg, int encoder, double* busy_s,
                                  double* wait_s) {
  const std::string name = BaseName(s_.state->SegmentPath(seg.index));
  const uint64_t t_start = MonotonicUs();
  // Written under a random name created exclusively, through its descriptor; renamed once done.
  Result<CreatedFile> partial = CreateExclusiveAt(s_.scratch_fd, name + ".partial.", "", 0600);
  if (!partial.ok()) return partial.status();
  auto remove_partial = [&] { ::unlinkat(s_.scratch_fd, partial->name.c_str(), 0); };
  Result<std::unique_ptr<SegmentEncoder>> enc =
      SegmentEncoder::Start(s_.config->ffmpeg, partial->fd.get(), s_.format,
                            s_.scratch + "/encoder-" + std::to_string(encoder) + ".log",
                            seg.first_frame, seg.frames);
  if (!enc.ok()) {
    remove_partial();
    return enc.status();
  }
  *busy_s += Seconds(t_start, MonotonicUs());
  bool ended = false;
  Status written = WriteChunks(seg, enc->get(), busy_s, wait_s, &ended);
  if (ended || !written.ok()) {
    enc->reset();  // kills and reaps the encoder
    remove_partial();
    return written;
  }
  const uint64_t t_finish = MonotonicUs();
  Status done = (*enc)->Finish();
  if (done.ok() && ::fsync(partial->fd.get()) != 0) {
    done = Status(StatusCode::kIo, "fsync segment " + name + ": " + std::strerror(errno));
  }
  if (done.ok()) {
    done = RenameCheckedAt(s_.scratch_fd, partial->name, partial->fd.get(), name,
                           RenameMode::kReplace);
  }
  if (!done.ok()) {
    remove_partial();
    return done;
  }
  struct stat sb {};
  if (::fstat(partial->fd.get(), &sb) != 0) return Status(StatusCode::kIo, "stat " + name);
  FM_RETURN_IF_ERROR(s_.state->Finished(seg.index, sb.st_size));
  const bool all_done = s_.state->all_done();
  if (all_done) arena_.board->MarkAllEncoded();
  if (s_.on_segment) s_.on_segment(seg.index, all_done);
  const uint64_t closed_us = MonotonicUs() - t_finish;
  *busy_s += static_cast<double>(closed_us) / 1e6;
  spdlog::debug("segment {} done: {} frames, closed {} ms after its last frames were written",
                seg.index, seg.frames, closed_us / 1000);
  return Status::Ok();
}

}  // namespace framemill
