#include "supervisor/spool/spool_requests.h"

#include <cstdint>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

constexpr int64_t kMaxRequestBytes = 4096;

nlohmann::json CancelledResult(const std::string& id, const std::string& message) {
  return FailedResultJson(id, Status(StatusCode::kCancelled, message));
}

std::string Describe(const Submitter& who) {
  return "uid " + std::to_string(who.uid) + (who.user.empty() ? "" : " (" + who.user + ")");
}

}  // namespace

const char* Name(RequestAction action) {
  switch (action) {
    case RequestAction::kCancel:
      return "cancel";
    case RequestAction::kRetry:
      return "retry";
  }
  return "unknown";
}

Result<RequestAction> ParseRequestAction(const std::string& text) {
  for (RequestAction a : {RequestAction::kCancel, RequestAction::kRetry}) {
    if (text == Name(a)) return a;
  }
  return Status(StatusCode::kInvalidJob, "request.action: must be cancel or retry");
}

bool RetryableReason(const std::string& code) {
  for (StatusCode c :
       {StatusCode::kInvalidJob, StatusCode::kInvalidConfig, StatusCode::kInputMissing,
        StatusCode::kInputInvalid, StatusCode::kModelInvalid, StatusCode::kOutputInvalid,
        StatusCode::kPathNotAllowed, StatusCode::kCancelled}) {
    if (code == StatusCodeName(c)) return false;
  }
  return !code.empty();
}

Result<Submitter> JobOwner(const std::string& dir) {
  Result<nlohmann::json> owner =
      ReadJsonFile(dir + "/owner.json", kMaxRequestBytes, StatusCode::kInternal);
  if (owner.ok()) return SubmitterFromJson(*owner);
  struct stat st {};
  if (::lstat((dir + "/job.json").c_str(), &st) != 0) {
    return Status(StatusCode::kInternal, dir + ": no owner.json and no job.json");
  }
  return LookupSubmitter(st.st_uid, st.st_gid);
}

std::vector<std::string> RequestHandler::Poll(const std::set<std::string>& running) {
  filed_.clear();
  std::vector<std::string> names;
  if (DIR* d = ::opendir(spool_.Dir("requests").c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        names.emplace_back(e->d_name);
      }
    }
    ::closedir(d);
  }
  for (const std::string& name : names) {
    try {
      Handle(spool_.Dir("requests") + "/" + name, running);
    } catch (const std::exception& e) {  // a request must not stop the service
      spdlog::error("request {}: {}", name, e.what());
      ::unlink((spool_.Dir("requests") + "/" + name).c_str());
    }
  }
  return std::move(filed_);
}

void RequestHandler::Handle(const std::string& path, const std::set<std::string>& running) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) return;
  if (stuck_.count({path, lst.st_ino}) != 0) return;
  auto remove = [&](const std::string& why) {
    if (!why.empty()) spdlog::warn("request {}: {}; removed", path, why);
    if (::unlink(path.c_str()) != 0 && ::rmdir(path.c_str()) != 0) {
      spdlog::warn("request {}: cannot remove it ({}); ignored from now on", path,
                   std::strerror(errno));
      stuck_.insert({path, lst.st_ino});
    }
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return remove(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  Result<std::string> text = ReadRegularFile(fd, kMaxRequestBytes, path, StatusCode::kInvalidJob);
  int stat_rc = ::fstat(fd, &st);
  ::close(fd);
  if (!text.ok() || stat_rc != 0) return remove(text.status().message());
  Result<nlohmann::json> j = ParseJsonText(*text, path, StatusCode::kInvalidJob);
  if (!j.ok()) return remove(j.status().message());
  FieldReader r(*j, "request", StatusCode::kInvalidJob);
  int64_t version = 1;
  std::string action, id;
  r.Int("version", &version, 1, 1);
  r.RequiredString("action", &action);
  r.RequiredString("job", &id);
  Status s = r.Finish();
  if (!s.ok()) return remove(s.message());
  Result<RequestAction> kind = ParseRequestAction(action);
  if (!kind.ok()) return remove(kind.status().message());
  Submitter from = LookupSubmitter(st.st_uid, st.st_gid);
  s = *kind == RequestAction::kCancel ? Cancel(id, from, running) : Retry(id, from);
  const char* name = Name(*kind);
  if (s.ok()) {
    spdlog::info("{} of job {} by {}: done", name, id, Describe(from));
  } else {
    spdlog::warn("{} of job {} by {}: refused: {}", name, id, Describe(from), s.message());
  }
  remove("");
}

Status RequestHandler::Cancel(const std::string& id, const Submitter& from,
                              const std::set<std::string>& running) {
  Result<SpoolEntry> e = spool_.Find(id);
  if (!e.ok()) return e.status();
  Result<Submitter> owner = Status(StatusCode::kInternal, "no owner");
  if (e->state == SpoolState::kIncoming) {
    struct stat st {};
    if (::lstat(e->path.c_str(), &st) != 0) return Status(StatusCode::kIo, "job file gone");
    owner = LookupSubmitter(st.st_uid, st.st_gid);
  } else if (e->state == SpoolState::kActive) {
    owner = JobOwner(e->path);
  } else {
    return Status(StatusCode::kInvalidJob,
                  std::string("job already ended (") + Name(e->state) + ")");
  }
  if (!owner.ok()) return owner.status();
  if (!MayControl(from, *owner, config_.admin_group)) {
    return Status(StatusCode::kPathNotAllowed,
                  "not the submitter (" + Describe(*owner) + ") nor an admin");
  }
  std::string message = "cancelled by " + Describe(from);
  if (running.count(id) != 0) return AtomicWriteFile(e->path + "/cancel", message + "\n");
  // Filed here: the job's end as any other's (the hook runs, the metrics count it).
  std::string filed_id = id;
  if (e->state == SpoolState::kIncoming) {
    Result<std::string> set_aside =
        spool_.SetAside(*e, CancelledResult(id, message + " before it started"));
    if (!set_aside.ok()) return set_aside.status();
    filed_id = *set_aside;
  } else {
    (void)RemoveTree(e->path + "/work");
    FM_RETURN_IF_ERROR(spool_.Finish(id, false, CancelledResult(id, message)));
  }
  filed_.push_back(filed_id);
  return Status::Ok();
}

Status RequestHandler::Retry(const std::string& id, const Submitter& from) {
  Result<SpoolEntry> e = spool_.Find(id);
  if (!e.ok()) return e.status();
  if (e->state != SpoolState::kFailed) {
    return Status(StatusCode::kInvalidJob,
                  std::string("job is ") + Name(e->state) + ", not failed");
  }
  Result<Submitter> owner = JobOwner(e->path);
  if (!owner.ok()) return owner.status();
  if (!MayControl(from, *owner, config_.admin_group)) {
    return Status(StatusCode::kPathNotAllowed,
                  "not the submitter (" + Describe(*owner) + ") nor an admin");
  }
  Result<nlohmann::json> result =
      ReadJsonFile(e->path + "/result.json", kMaxJobFileBytes, StatusCode::kInternal);
  const std::string code = result.ok() ? ResultReasonCode(*result) : "";
  if (!RetryableReason(code)) {
    return Status(StatusCode::kInvalidJob, "failed with " + (code.empty() ? "no reason" : code) +
                                               ", which a retry cannot mend: fix it and submit "
                                               "again");
  }
  return spool_.Requeue(id);
}

}  // namespace framemill
