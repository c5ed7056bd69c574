#include "supervisor/job/decode_thread.h"

#include <utility>

#include "common/log.h"

namespace framemill {

DecodeThread::DecodeThread(const ArenaPlanner& planner, JobArena* arena,
                           const std::atomic<Dispatcher*>* wake,
                           const std::atomic<uint64_t>* pipeline_start_us)
    : planner_(planner), arena_(*arena), wake_(wake), pipeline_start_us_(pipeline_start_us) {}

DecodeThread::~DecodeThread() { Stop(); }

void DecodeThread::Begin(DecodeSetup base, SharedMemory kept, const ArenaGeometry& kept_geometry) {
  base_ = std::move(base);
  kept_ = std::move(kept);
  kept_geometry_ = kept_geometry;
  if (kept_.data() != nullptr) return;  // its workers' probe, not a guess, says whether it fits
  ColorConversion conversion = ColorConversion::kAccurate;
  guess_ = planner_.Guess(&conversion);
  if (guess_) StartEarly(*guess_, conversion);
}

std::unique_ptr<DecodeStage> DecodeThread::MakeStage() const {
  DecodeSetup setup = base_;
  setup.in_format = in_format_;
  setup.conversion = conversion_;
  setup.restarts_used = restarts_used_;
  return std::make_unique<DecodeStage>(std::move(setup), &arena_, wake_, pipeline_start_us_);
}

void DecodeThread::StartEarly(const ArenaGeometry& guess, ColorConversion conversion) {
  conversion_ = conversion;
  in_format_ = planner_.InputFormat(conversion);
  arena_.geometry = guess;
  arena_.geometry.flags = planner_.PageLocks(arena_.geometry) ? kArenaPageLock : 0;
  arena_.MakeBoard(static_cast<int64_t>(base_.prepared->plan.chunks.size()));
  decode_ = MakeStage();
  auto made = std::make_shared<std::promise<Status>>();
  early_ = made->get_future();
  thread_ = std::thread([this, made] {
    // Creating it zeroes its pages (posix_fallocate on tmpfs: 0.45 s for 2.6 GB on the 2-core
    // machine, 0.75 s for 4 GB on the H200 machine), off the start as the decoding is; and only
    // slot 0's unless the workers page-lock it: the decoder reserves each slot as it first takes
    // it, so that a worker ready early (a spare) does not wait for gigabytes to be zeroed.
    try {
      Result<SharedMemory> shm = CreateFrameArena(
          arena_.geometry, /*all_slots=*/(arena_.geometry.flags & kArenaPageLock) != 0);
      if (!shm.ok()) return made->set_value(shm.status());
      arena_.Adopt(std::move(*shm));
    } catch (const std::exception& e) {
      return made->set_value(Status(StatusCode::kInternal, std::string("arena: ") + e.what()));
    }
    made->set_value(Status::Ok());  // the arena is the main thread's to read from here on
    decode_->Run();
  });
}

void DecodeThread::Drop(const Status& made) {
  arena_.board->Fail(Status(StatusCode::kCancelled, "the arena's guess was wrong"));
  JoinThread(/*times=*/false);
  restarts_used_ = joined_->restarts;
  decode_.reset();
  arena_ = JobArena();
  spdlog::info("the early arena's guess was wrong{}: made again, decoding from the start",
               made.ok() ? "" : " (" + made.message() + ")");
}

void DecodeThread::Start() {
  decode_ = MakeStage();
  thread_ = std::thread([this] { decode_->Run(); });
}

Status DecodeThread::Settle(ArenaGeometry g, ColorConversion conversion, std::string* origin) {
  if (thread_.joinable()) {
    // The early decoder's: kept, and its decoder goes on, when the guess was right (the same
    // arena and the same conversion, so the same frames). Else it stops, its frames dropped.
    const Status made = early_.get();
    if (made.ok() && SameArenaGeometry(*guess_, g) && conversion == conversion_) {
      *origin = "early";
      spdlog::info("arena made, and decoded into, while the workers started");
      return Status::Ok();
    }
    Drop(made);
  }
  conversion_ = conversion;
  in_format_ = planner_.InputFormat(conversion);
  Result<SharedMemory> shm = Status(StatusCode::kInternal, "no arena");
  if (kept_.data() != nullptr) {
    // The previous job's, beside the workers this job reuses: already zeroed, and already
    // page-locked in those workers.
    if (ArenaHolds(kept_geometry_, g)) {
      shm = std::move(kept_);
      g = kept_geometry_;  // its slots, perhaps more than this job would have made
      *origin = "kept";
      spdlog::info("arena kept from the previous job, with its workers");
    }
    kept_ = SharedMemory();  // not this job's geometry: removed now
  }
  arena_.geometry = g;
  arena_.geometry.flags = planner_.PageLocks(arena_.geometry) ? kArenaPageLock : 0;
  const bool page_locks = (arena_.geometry.flags & kArenaPageLock) != 0;
  if (!shm.ok()) {
    // Slots reserved as the decoder first takes them, unless the workers page-lock the whole
    // arena at their first chunk.
    shm = CreateFrameArena(g, /*all_slots=*/page_locks);
    *origin = "made";
  }
  if (!shm.ok()) return shm.status();
  // A kept arena may have slots its job never took, not reserved yet: page-locking touches them.
  if (page_locks) FM_RETURN_IF_ERROR(shm->Reserve(0, shm->size()));
  arena_.Adopt(std::move(*shm));
  arena_.MakeBoard(static_cast<int64_t>(base_.prepared->plan.chunks.size()));
  Start();
  return Status::Ok();
}

void DecodeThread::JoinThread(bool times) {
  if (!thread_.joinable()) return;
  thread_.join();
  const DecodeFigures& f = decode_->figures();
  if (!joined_) joined_.emplace();
  joined_->restarts = f.restarts;
  joined_->faults.insert(joined_->faults.end(), f.faults.begin(), f.faults.end());
  joined_->ended_short = joined_->ended_short || f.ended_short;
  if (!times) return;
  joined_->decode_s = f.decode_s;
  joined_->decode_wait_s = f.decode_wait_s;
  joined_->decode_early_s = f.decode_early_s;
}

std::optional<DecodeFigures> DecodeThread::Join() {
  JoinThread(/*times=*/true);
  return std::exchange(joined_, std::nullopt);
}

void DecodeThread::Stop() {
  if (!thread_.joinable()) return;
  if (arena_.board) arena_.board->Fail(Status(StatusCode::kInternal, "the job ended early"));
  thread_.join();
}

}  // namespace framemill
