// The chunks' side of dispatch: the next ready chunk and the request that carries it to a worker,
// which held chunk a worker's result answers (checked: shm_validate.h), and how often each chunk
// has failed (sent again, first in line, until settings.max_attempts failures fail the job).
// Owns the attempts per chunk and the count of chunks processed; meets the other stages at the
// chunk board (supervisor/plan/chunk_board.h), handed to it for one run. It never sees a
// process: the Dispatcher owns the workers and which chunks each holds (DispatchChannel::inflight).
// Not thread-safe: the dispatcher's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "supervisor/plan/chunk_board.h"
#include "supervisor/plan/job_plan.h"

namespace framemill {

class ChunkFeed {
 public:
  ChunkFeed(const JobPlan& plan, const JobSettings& settings);

  // The board and the arena of one run; chunks before `first_chunk` are already done. The arena's
  // geometry is the supervisor's own copy, sent with every request.
  void Begin(ChunkBoard* board, const std::string& arena_name, const ArenaGeometry& arena,
             int64_t first_chunk);
  // True once Begin was called: there is an arena to name in requests.
  bool begun() const { return !arena_name_.empty(); }

  // The next ready chunk, taken from the board, as the request that carries it; none when no
  // chunk is ready. A request that could not be sent goes back with Unsent.
  std::optional<ChunkRequest> Next();
  void Unsent(const ChunkRequest& request);
  // A warm-up batch at the run's frame size, for a worker idle until its turn (a standby).
  ChunkRequest Warmup() const;

  // The index in `held` (a worker's chunks, as sent) of the chunk that result `r` answers; an
  // error when `r` answers none of them or is invalid: the worker broke the protocol.
  Result<size_t> Match(const ChunkResult& r, const std::deque<int64_t>& held) const;
  // `chunk`'s output is in the arena.
  void Processed(int64_t chunk);
  // `chunk` failed (`why`): it is sent again, first in line (true), or at its max_attempts-th
  // failure the board fails with `code` (false).
  bool Failed(int64_t chunk, const std::string& why, StatusCode code);
  // The chunks a worker held when it died or was killed (`why`), oldest first: each fails with
  // kWorkerFailed, the oldest ending up first in line. Returns how many are sent again.
  int Lost(const std::deque<int64_t>& held, const std::string& why);

  // Chunks whose output is in the arena, those before Begin's first_chunk included.
  int64_t processed() const { return processed_; }
  int64_t total() const { return static_cast<int64_t>(plan_.chunks.size()); }

 private:
  const JobPlan& plan_;
  const JobSettings& settings_;
  std::vector<int> attempts_;  // by chunk
  ChunkBoard* board_ = nullptr;
  std::string arena_name_;
  ArenaGeometry arena_{};
  int64_t processed_ = 0;
};

}  // namespace framemill
