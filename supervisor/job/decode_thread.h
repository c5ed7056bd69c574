// The decoder's side of a run: where its arena comes from and the thread it decodes on. While the
// workers start, the arena the previous job's workers kept (when this job reuses them), else one
// made from a guess of its geometry (ArenaPlanner::Guess) and decoded into at once: the early
// decoder. Once the workers' probe says what the job needs (Settle), the early arena is kept and
// its decoder goes on when the guess was right; else it is dropped with its frames, and the kept
// arena (when it holds the job) or a new one is decoded into from the start.
//
// Owns the decode stage (decode_stage.h) and its thread, the guess, the kept arena until Settle,
// the colour conversion the decoder applies and the decoder restarts already used. The arena
// itself (JobArena) is the run's, where the stages meet: made and remade here, read by the other
// stages once Settle has returned. Called from the run's thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "supervisor/job/decode_stage.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/workers/dispatcher.h"

namespace framemill {

class DecodeThread {
 public:
  // `arena`: the run's, made here. `wake` and `pipeline_start_us`: the decode stage's
  // (decode_stage.h). All outlive this.
  DecodeThread(const ArenaPlanner& planner, JobArena* arena, const std::atomic<Dispatcher*>* wake,
               const std::atomic<uint64_t>* pipeline_start_us);
  ~DecodeThread();  // Stop()

  // Before the workers start. `base`: the decoder's setup but for what this decides (in_format,
  // conversion, restarts_used). `kept`: the arena the previous job's workers kept (of
  // `kept_geometry`), when this job reuses them; without one, the early decoder starts when a
  // guess can be made.
  void Begin(DecodeSetup base, SharedMemory kept, const ArenaGeometry& kept_geometry);
  // The arena the job needs (`wanted`, its input frames for `conversion`), in place with a
  // decoder running on it; `*origin` says where it came from: "early", "kept" or "made".
  Status Settle(ArenaGeometry wanted, ColorConversion conversion, std::string* origin);
  // Waits for the decoder to end. The figures of the decoders ended since the last call (a
  // dropped early decoder's faults and restarts, not its times), or none.
  std::optional<DecodeFigures> Join();
  // A decoder still running (the run ended early) is stopped, the board failed, and joined.
  void Stop();

  // The decoder's colour conversion (never kAuto) and how its frames lie in the arena.
  ColorConversion conversion() const { return conversion_; }
  FrameFormat in_format() const { return in_format_; }

 private:
  void StartEarly(const ArenaGeometry& guess, ColorConversion conversion);
  void Drop(const Status& made);
  void Start();
  std::unique_ptr<DecodeStage> MakeStage() const;
  // Joins the thread, when it runs, and keeps its figures (`times`: its timings too).
  void JoinThread(bool times);

  const ArenaPlanner planner_;
  JobArena& arena_;
  const std::atomic<Dispatcher*>* wake_;
  const std::atomic<uint64_t>* pipeline_start_us_;
  DecodeSetup base_;
  ColorConversion conversion_ = ColorConversion::kAccurate;
  FrameFormat in_format_ = FrameFormat::kRgb24;
  SharedMemory kept_;  // the previous job's arena (Begin), until Settle
  ArenaGeometry kept_geometry_{};
  std::optional<ArenaGeometry> guess_;  // the early arena's geometry, when one was made
  std::future<Status> early_;           // the early arena made (or why not)
  int64_t restarts_used_ = 0;           // decoder restarts of a dropped early decoder
  std::unique_ptr<DecodeStage> decode_;
  std::thread thread_;
  std::optional<DecodeFigures> joined_;  // since the last Join
};

}  // namespace framemill
