// The dispatcher's rules that need no process: where a new worker goes, how many chunks a worker
// is sent, who takes over when a worker leaves (dispatch_channel.h), and how verdicts and crashes
// are counted (dispatch_stats.h).
#include <doctest/doctest.h>

#include <vector>

#include "supervisor/workers/dispatch_stats.h"
#include "supervisor/workers/dispatch_channel.h"

using namespace framemill;

namespace {

DispatchChannel On(WorkerRole role, int gpu = -1) {
  DispatchChannel ch;
  ch.role = role;
  ch.gpu = gpu;
  return ch;
}

bool NoneAlive(int) { return false; }

}  // namespace

TEST_CASE("a new worker goes to the GPU with the fewest workers, a standby to its worker's") {
  const std::vector<int> gpus = {0, 1, 2};
  std::vector<DispatchChannel> ch(6);
  CHECK(LeastLoadedGpu(gpus, ch) == 0);  // all empty: the first
  ch[0] = On(WorkerRole::kActive, 0);
  ch[1] = On(WorkerRole::kLoading, 1);
  CHECK(LeastLoadedGpu(gpus, ch) == 2);
  ch[2] = On(WorkerRole::kStandby, 2);
  CHECK(LeastLoadedGpu(gpus, ch) == 0);  // one each: the first
  ch[3] = On(WorkerRole::kRetiring, 0);  // on its way out: does not count
  ch[4] = On(WorkerRole::kActive, 1);
  CHECK(LeastLoadedGpu(gpus, ch) == 0);
  ch[5] = On(WorkerRole::kActive, 0);
  CHECK(LeastLoadedGpu(gpus, ch) == 2);
  CHECK(LeastLoadedGpu({}, ch) == -1);  // not pinned

  CHECK(GpuFor(-1, gpus, ch) == 2);
  CHECK(GpuFor(4, gpus, ch) == 1);  // a standby for the worker on channel 4
  CHECK(GpuFor(-1, {}, ch) == -1);
}

TEST_CASE("a free channel has no role and no live process") {
  std::vector<DispatchChannel> ch(4);
  ch[0] = On(WorkerRole::kActive);
  CHECK(FreeChannel(ch, NoneAlive) == 1);
  CHECK(FreeChannel(ch, [](int k) { return k == 1; }) == 2);  // exited, not reaped yet
  ch[2] = On(WorkerRole::kStandby);
  ch[3] = On(WorkerRole::kRetiring);
  CHECK(FreeChannel(ch, [](int k) { return k == 1; }) == -1);
}

TEST_CASE("serving workers are active ones and loading ones that replace nobody") {
  std::vector<DispatchChannel> ch(6);
  CHECK(Serving(ch) == 0);
  ch[0] = On(WorkerRole::kActive);
  ch[1] = On(WorkerRole::kLoading);
  ch[2] = On(WorkerRole::kLoading);
  ch[2].replaces = 0;  // a standby while channel 0 still works
  ch[3] = On(WorkerRole::kStandby);
  ch[3].replaces = 1;
  ch[4] = On(WorkerRole::kRetiring);
  CHECK(Serving(ch) == 2);
}

TEST_CASE("an active worker that is not being killed holds two chunks") {
  DispatchChannel ch = On(WorkerRole::kActive);
  CHECK(ChunksWanted(ch) == kInflightPerWorker);
  ch.inflight.push_back(7);
  CHECK(ChunksWanted(ch) == 1);
  ch.inflight.push_back(8);
  CHECK(ChunksWanted(ch) == 0);
  ch.inflight.push_back(9);  // never negative
  CHECK(ChunksWanted(ch) == 0);
  ch.inflight.clear();
  ch.kill_deadline_ms = 1;  // SIGTERM sent
  CHECK(ChunksWanted(ch) == 0);
  for (WorkerRole r :
       {WorkerRole::kNone, WorkerRole::kLoading, WorkerRole::kStandby, WorkerRole::kRetiring}) {
    INFO(Name(r));
    CHECK(ChunksWanted(On(r)) == 0);
  }
}

TEST_CASE("a retiring worker is sent kStop once, when its chunks are done") {
  DispatchChannel ch = On(WorkerRole::kRetiring);
  ch.inflight.push_back(3);
  CHECK_FALSE(WantsStop(ch));
  ch.inflight.clear();
  CHECK(WantsStop(ch));
  ch.stop_sent = true;
  CHECK_FALSE(WantsStop(ch));
  CHECK_FALSE(WantsStop(On(WorkerRole::kActive)));
}

TEST_CASE("a ready worker is a standby when it replaces one, else active") {
  DispatchChannel ch = On(WorkerRole::kLoading);
  CHECK(RoleWhenReady(ch) == WorkerRole::kActive);
  ch.replaces = 2;
  CHECK(RoleWhenReady(ch) == WorkerRole::kStandby);
}

TEST_CASE("when a worker leaves, its standby takes over, at once or when ready") {
  std::vector<DispatchChannel> ch(4);
  ch[0] = On(WorkerRole::kRetiring);
  ch[0].standby = 1;
  ch[1] = On(WorkerRole::kStandby);
  ch[1].replaces = 0;
  Promote(&ch, 0);
  CHECK(ch[0].standby == -1);
  CHECK(ch[1].role == WorkerRole::kActive);
  CHECK(ch[1].replaces == -1);

  ch[2] = On(WorkerRole::kActive);
  ch[2].standby = 3;
  ch[3] = On(WorkerRole::kLoading);
  ch[3].replaces = 2;
  Promote(&ch, 2);
  CHECK(ch[3].role == WorkerRole::kLoading);  // still loading: active when ready
  CHECK(ch[3].replaces == -1);
  CHECK(RoleWhenReady(ch[3]) == WorkerRole::kActive);
  CHECK(Serving(ch) == 3);  // now counted as serving

  const std::vector<DispatchChannel> before = ch;
  Promote(&ch, 1);  // no standby: nothing changes
  for (size_t k = 0; k < ch.size(); ++k) {
    CHECK(ch[k].role == before[k].role);
    CHECK(ch[k].replaces == before[k].replaces);
  }
}

TEST_CASE("a move to an offered model: each active worker gets a standby, which moves it over") {
  std::vector<DispatchChannel> ch(6);
  ch[0] = On(WorkerRole::kActive);  // on the job's model (0)
  ch[1] = On(WorkerRole::kActive);
  ch[1].kill_deadline_ms = 5;  // being killed: its replacement comes as a crash's does
  ch[2] = On(WorkerRole::kRetiring);
  ch[3] = On(WorkerRole::kActive);
  CHECK(NextToMove(ch, 0) == -1);  // no offer taken: every worker runs the pool's model
  ch[3].model = 1;                 // started on the offered model already
  CHECK(NextToMove(ch, 1) == 0);
  ch[0].standby = 4;  // its standby is loading
  ch[4] = On(WorkerRole::kLoading);
  ch[4].replaces = 0;
  ch[4].model = 1;
  CHECK(NextToMove(ch, 1) == -1);  // the rest are being killed, retiring, or moved

  CHECK_FALSE(MovesOver(ch, 4, 1));  // still loading
  ch[4].role = RoleWhenReady(ch[4]);
  REQUIRE(ch[4].role == WorkerRole::kStandby);
  CHECK(MovesOver(ch, 4, 1));
  // A standby of the same model (a limit's warm standby) waits for its worker's limit.
  ch[5] = On(WorkerRole::kStandby);
  ch[5].replaces = 3;
  ch[5].model = 1;
  CHECK_FALSE(MovesOver(ch, 5, 1));
  // A standby of a model dropped since (the pool back on 0) moves nobody over.
  CHECK_FALSE(MovesOver(ch, 4, 0));
  // Its worker retired meanwhile (a limit): the standby takes over as usual, no move to make.
  ch[0].role = WorkerRole::kRetiring;
  CHECK_FALSE(MovesOver(ch, 4, 1));
}

TEST_CASE("active idle workers and loading ones are kept for the next job") {
  DispatchChannel ch = On(WorkerRole::kActive);
  CHECK(KeptAtRelease(ch));
  ch.inflight.push_back(1);
  CHECK_FALSE(KeptAtRelease(ch));
  CHECK(KeptAtRelease(On(WorkerRole::kLoading)));
  for (WorkerRole r : {WorkerRole::kNone, WorkerRole::kStandby, WorkerRole::kRetiring}) {
    INFO(Name(r));
    CHECK_FALSE(KeptAtRelease(On(r)));
  }
}

TEST_CASE("the policy judges loading workers, active ones, and the rest by hard limits") {
  CHECK(PhaseOf(WorkerRole::kLoading) == WorkerPhase::kLoading);
  CHECK(PhaseOf(WorkerRole::kActive) == WorkerPhase::kActive);
  CHECK(PhaseOf(WorkerRole::kStandby) == WorkerPhase::kOther);
  CHECK(PhaseOf(WorkerRole::kRetiring) == WorkerPhase::kOther);
  CHECK(PhaseOf(WorkerRole::kNone) == WorkerPhase::kOther);
}

TEST_CASE("recycles and kills are counted by the name of their limit, crashes by how") {
  DispatchStats s;
  s.Count({RecycleAction::kKeep, RecycleLimit::kNone, 0, 0, ""});
  s.Count({RecycleAction::kStartStandby, RecycleLimit::kRss, 1, 1, "rss"});
  CHECK(s.recycles.empty());
  CHECK(s.kills == 0);
  CHECK(s.kills_by_reason.empty());

  s.Count({RecycleAction::kRecycle, RecycleLimit::kRss, 0, 0, "rss ..."});
  s.Count({RecycleAction::kRecycle, RecycleLimit::kRss, 0, 0, "rss ..."});
  s.Count({RecycleAction::kRecycle, RecycleLimit::kGpuReserved, 0, 0, "gpu reserved ..."});
  s.Count({RecycleAction::kRecycle, RecycleLimit::kMaxChunks, 0, 0, "ran ..."});
  CHECK(s.recycles == std::map<std::string, int>{{"rss", 2}, {"gpu", 1}, {"max_chunks", 1}});
  CHECK(s.kills == 0);

  s.Count({RecycleAction::kKill, RecycleLimit::kHang, 0, 0, "no heartbeat ..."});
  s.Count({RecycleAction::kKill, RecycleLimit::kStartTimeout, 0, 0, "model not loaded ..."});
  s.Count({RecycleAction::kKill, RecycleLimit::kGpuReserved, 0, 0, "gpu reserved ..."});
  s.Count({RecycleAction::kKill, RecycleLimit::kRss, 0, 0, "rss ..."});
  CHECK(s.protocol_violations == 0);
  s.Count({RecycleAction::kKill, RecycleLimit::kProtocol, 0, 0, "protocol violation: ..."});
  CHECK(s.kills == 5);
  CHECK(s.protocol_violations == 1);
  CHECK(s.kills_by_reason ==
        std::map<std::string, int>{
            {"hang", 1}, {"start_timeout", 1}, {"gpu", 1}, {"rss", 1}, {"protocol", 1}});
  CHECK(s.recycles.size() == 3);  // kills do not count as recycles

  s.CountCrash(true);
  s.CountCrash(false);
  s.CountCrash(false);
  CHECK(s.crashes == 3);
  CHECK(s.crashes_by_reason == std::map<std::string, int>{{"signal", 1}, {"exit", 2}});
  CHECK(s.kills == 5);
}
