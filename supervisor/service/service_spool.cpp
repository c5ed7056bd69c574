#include "supervisor/service/service_spool.h"

#include <algorithm>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "supervisor/service/job_end_hook.h"
#include "supervisor/report/job_result.h"
#include "supervisor/spool/queue_order.h"
#include "supervisor/spool/submitter.h"

namespace framemill {

nlohmann::json FailureResult(const std::string& id, const std::string& code,
                             const std::string& message) {
  nlohmann::json result = FailedResultJson(id, code, message);
  result["finished_at"] = IsoNow();
  return result;
}

nlohmann::json FailureResult(const std::string& id, const Status& s) {
  return FailureResult(id, StatusCodeName(s.code()), s.message());
}

ServiceSpool::ServiceSpool(const Config& config, std::function<void()> on_end)
    : config_(config), on_end_(std::move(on_end)), spool_(config.spool_dir),
      requests_(spool_, config), hooks_({config.on_job_end, config.on_job_end_timeout_s}) {}

Status ServiceSpool::Open() {
  MutexLock lock(&mu_);
  FM_RETURN_IF_ERROR(spool_.Prepare());
  return spool_.Lock();
}

SpoolCounts ServiceSpool::Count() {
  MutexLock lock(&mu_);
  return spool_.Count();
}

void ServiceSpool::PollRequests(const std::set<std::string>& running) {
  std::vector<std::string> filed;  // cancelled before they ran: ended here, unlocked
  try {
    MutexLock lock(&mu_);
    filed = requests_.Poll(running);
  } catch (const std::exception& e) {  // the spool's own files; never a reason to stop
    spdlog::error("reading the spool's requests: {}", e.what());
  }
  for (const std::string& id : filed) Ended(id, SpoolState::kFailed);
}

std::string ServiceSpool::ClaimNext(const std::set<std::string>& running) {
  std::string id;
  std::vector<std::string> set_aside;  // ended below, once the lock is let go
  std::vector<std::pair<std::string, SpoolState>> filed;
  try {
    MutexLock lock(&mu_);
    if (!PausedLocked()) {
      filed = FileUnfiled();
      if (!PausedLocked()) id = NextJob(running, &set_aside);
    }
  } catch (const std::exception& e) {  // the spool's own files; never a reason to stop
    spdlog::error("reading the spool: {}", e.what());
  }
  for (const auto& [job, state] : filed) Ended(job, state);
  for (const std::string& failed : set_aside) Ended(failed, SpoolState::kFailed);
  return id;
}

bool ServiceSpool::PausedLocked() const { return full_.load() && MonotonicMs() < full_retry_ms_; }

void ServiceSpool::NoteWriteFailed(const Status& s) {
  MutexLock lock(&mu_);
  NoteWriteFailedLocked(s);
}

void ServiceSpool::NoteWriteFailedLocked(const Status& s) {
  if (s.code() != StatusCode::kNoSpace) return;
  if (!full_.exchange(true)) {
    spdlog::error("the spool's file system is full ({}): no job is claimed or filed until space "
                  "returns; tried again every {} s",
                  s.message(), kSpoolFullRetryMs / 1000);
  }
  full_retry_ms_ = MonotonicMs() + kSpoolFullRetryMs;
}

std::vector<std::pair<std::string, SpoolState>> ServiceSpool::FileUnfiled() {
  std::vector<std::pair<std::string, SpoolState>> filed;
  for (auto it = unfiled_.begin(); it != unfiled_.end();) {
    Status s = spool_.Finish(it->first, it->second.ok, it->second.result);
    if (!s.ok()) {
      NoteWriteFailedLocked(s);
      return filed;  // the rest wait with it
    }
    spdlog::info("job {} filed now, {} after the spool had no room for it", it->first,
                 it->second.ok ? "done" : "failed");
    filed.emplace_back(it->first, it->second.ok ? SpoolState::kDone : SpoolState::kFailed);
    it = unfiled_.erase(it);
    NoteWriteWorkedLocked();
  }
  return filed;
}

void ServiceSpool::NoteWriteWorkedLocked() {
  if (full_.exchange(false)) spdlog::info("the spool has space again: claiming and filing jobs");
}

std::string ServiceSpool::NextJob(const std::set<std::string>& running,
                                  std::vector<std::string>* set_aside) {
  for (const SpoolEntry& e : spool_.Active()) {  // left by a crash or a stop, or retried
    if (unfiled_.count(e.id) == 0 && running.count(e.id) == 0) {
      spdlog::info("resuming job {}", e.id);
      return e.id;
    }
  }
  // The queue's rules (queue_order.h): who may raise a priority, and one user's jobs at once.
  QueueUsers users;
  users.last_claim = last_claim_;
  for (const std::string& id : running) {
    ++users.running[Spool::SubmitterOf(spool_.JobDir(SpoolState::kActive, id))];
  }
  QueueRules rules;
  rules.may_raise_priority = [this](uint32_t uid) {
    return IsAdmin(LookupSubmitter(uid, uid), config_.admin_group);
  };
  rules.max_running_per_user = config_.max_running_per_user;
  std::vector<SpoolEntry> waiting = spool_.Incoming(&seen_);
  const std::vector<SpoolEntry> over = OverQueued(waiting, config_.max_queued_per_user);
  std::set<uint64_t> refused;
  for (const SpoolEntry& e : over) {
    refused.insert(e.inode);
    if (stuck_.count({e.path, e.inode}) != 0) continue;
    SetAside(e,
             Status(StatusCode::kInvalidJob,
                    "user " + std::to_string(e.uid) + " has more than " +
                        std::to_string(config_.max_queued_per_user) +
                        " jobs waiting (max_queued_per_user); this one, among the latest, is "
                        "refused"),
             set_aside);
  }
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(),
                               [&](const SpoolEntry& e) { return refused.count(e.inode) != 0; }),
                waiting.end());
  for (const SpoolEntry& e : OrderQueue(std::move(waiting), users, rules)) {
    if (stuck_.count({e.path, e.inode}) != 0) continue;
    Result<ClaimedJob> claimed = spool_.Claim(e);
    if (!claimed.ok() && claimed.status().code() == StatusCode::kNoSpace) {
      NoteWriteFailedLocked(claimed.status());  // it stays in incoming/, claimed later
      return "";
    }
    if (!claimed.ok() && claimed.status().code() == StatusCode::kInvalidJob) {
      SetAside(e, claimed.status(), set_aside);
      continue;
    }
    if (!claimed.ok()) {
      spdlog::error("cannot claim {}: {}; skipped until it changes", e.path,
                    claimed.status().message());
      stuck_.insert({e.path, e.inode});
      continue;
    }
    if (claimed->id.empty()) continue;  // vanished (or replaced, and filed)
    last_claim_[claimed->uid] = ++claims_;
    NoteWriteWorkedLocked();
    return claimed->id;
  }
  return "";
}

void ServiceSpool::SetAside(const SpoolEntry& e, const Status& why,
                            std::vector<std::string>* set_aside) {
  Result<std::string> id = spool_.SetAside(e, FailureResult(e.id, why));
  if (id.ok()) {
    spdlog::warn("{} set aside as failed/{}: {}", e.path, *id, why.message());
    set_aside->push_back(*id);
  } else {
    spdlog::error("{}: {}; and it cannot be moved aside ({}): skipped until it changes", e.path,
                  why.message(), id.status().message());
    stuck_.insert({e.path, e.inode});
  }
}

int ServiceSpool::CountWaiting(const std::string& head, const std::set<std::string>& running) {
  int waiting = 1;  // the head, those in incoming/, and those in active/ to resume
  MutexLock lock(&mu_);
  waiting += static_cast<int>(spool_.Count().incoming);
  for (const SpoolEntry& e : spool_.Active()) {
    if (e.id != head && running.count(e.id) == 0 && unfiled_.count(e.id) == 0) ++waiting;
  }
  return waiting;
}

void ServiceSpool::RemoveOldFailedWork() {
  MutexLock lock(&mu_);
  int removed = spool_.RemoveOldFailedWork(config_.failed_work_keep_days * 86400.0);
  if (removed > 0) {
    spdlog::info("removed the kept work of {} failed jobs older than {} days", removed,
                 config_.failed_work_keep_days);
  }
}

Result<int> ServiceSpool::RaiseStarts(const std::string& id) {
  MutexLock lock(&mu_);
  Result<int> starts = spool_.RaiseStarts(id);
  if (!starts.ok()) {
    NoteWriteFailedLocked(starts.status());
  } else {
    NoteWriteWorkedLocked();
  }
  return starts;
}

void ServiceSpool::LowerStarts(const std::string& id) {
  MutexLock lock(&mu_);
  spool_.LowerStarts(id);
}

void ServiceSpool::File(const std::string& id, bool ok, const nlohmann::json& result) {
  {
    MutexLock lock(&mu_);
    Status s = spool_.Finish(id, ok, result);
    if (!s.ok()) {
      spdlog::error("job {}: cannot file its result: {}; left in active/, filed when the spool "
                    "can take it",
                    id, s.message());
      NoteWriteFailedLocked(s);
      unfiled_[id] = {ok, result};
      return;
    }
    NoteWriteWorkedLocked();
  }
  Ended(id, ok ? SpoolState::kDone : SpoolState::kFailed);
}

void ServiceSpool::Ended(const std::string& id, SpoolState state) {
  on_end_();
  hooks_.Post({id, state, names().JobDir(state, id)});
}

}  // namespace framemill
