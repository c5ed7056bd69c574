#include "supervisor/front/spool_commands.h"

#include <cstdint>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/job_file.h"
#include "common/json_fields.h"
#include "supervisor/front/job_args.h"
#include "supervisor/front/spool.h"
#include "supervisor/front/spool_requests.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  Result<nlohmann::json> j = ReadJsonFile(path, 16 << 20, StatusCode::kIo);
  return j.ok() ? *j : nlohmann::json();
}

// The fields `list --json` gives each job and `status --json` each active one: id, state,
// priority, submitted (Unix seconds), and by state progress (active), output (done) or reason
// (failed: the reason code).
nlohmann::json EntryJson(const SpoolEntry& e) {
  nlohmann::json j = {{"id", e.id},
                      {"state", Name(e.state)},
                      {"priority", e.priority},
                      {"submitted", static_cast<double>(e.submitted_ns) / 1e9}};
  if (e.state == SpoolState::kActive) j["progress"] = ReadJson(e.path + "/progress.json");
  if (e.state == SpoolState::kDone) j["output"] = ResultOutput(ReadJson(e.path + "/result.json"));
  if (e.state == SpoolState::kFailed) {
    j["reason"] = ResultReasonCode(ReadJson(e.path + "/result.json"));
  }
  return j;
}

// A client's spool must exist and be readable: an empty listing of a spool that is not there
// would hide a wrong config or a service that never started. Prints why and returns false.
bool SpoolUsable(const Spool& spool, const char* command) {
  const std::string incoming = spool.Dir(SpoolState::kIncoming);
  struct stat st {};
  const int err = ::stat(spool.root().c_str(), &st) != 0 ? errno : 0;
  if (err != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr,
                 "framemill %s: no spool at %s (%s). The service creates it when it first "
                 "starts (systemctl start framemill); or give --config FILE (or set "
                 "FRAMEMILL_CONFIG) naming the spool_dir the service uses.\n",
                 command, spool.root().c_str(), err == 0 ? "not a directory" : std::strerror(err));
    return false;
  }
  if (::access(incoming.c_str(), R_OK | X_OK) != 0) {
    std::fprintf(stderr,
                 "framemill %s: cannot read %s (%s): is this framemill's spool, and may this "
                 "user read it?\n",
                 command, incoming.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int SubmitCommand(const SubmitArgs& args, const Config& config, bool json) {
  Result<nlohmann::json> from_args =
      JobFromArgs(args.input, args.model, args.output, args.settings);
  if (!from_args.ok()) {
    std::fprintf(stderr, "framemill submit: %s\n", from_args.status().message().c_str());
    return kExitUsage;
  }
  nlohmann::json& job = *from_args;
  if (!args.priority.empty()) job["priority"] = CliValue(args.priority);
  Result<JobSpec> parsed = ParseJob(job, config.defaults);
  if (!parsed.ok()) {
    std::fprintf(stderr, "framemill submit: job rejected: %s\n",
                 parsed.status().ToString().c_str());
    return kExitFailed;
  }
  // Nothing is created but the job file: a fresh install (tmpfiles made the spool, the service
  // never ran) takes jobs, and a client cannot create the service's folders anyway.
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "submit")) return kExitFailed;
  Result<std::string> id = spool.Submit(job);
  if (!id.ok()) {
    std::fprintf(stderr, "framemill submit: %s\n", id.status().ToString().c_str());
    return kExitFailed;
  }
  if (json) {
    std::printf(
        "%s\n",
        DumpJson({{"id", *id}, {"state", Name(SpoolState::kIncoming)}, {"job", job}}, 2).c_str());
  } else {
    std::printf("%s\n", id->c_str());
  }
  return kExitOk;
}

int ListCommand(const Config& config, bool json) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "list")) return kExitFailed;
  nlohmann::json all = nlohmann::json::array();
  for (const SpoolEntry& e : spool.All()) {
    nlohmann::json entry = EntryJson(e);
    if (json) {
      all.push_back(entry);
      continue;
    }
    std::string detail;
    switch (e.state) {
      case SpoolState::kIncoming:
        detail = "priority " + std::to_string(e.priority);
        break;
      case SpoolState::kActive:
        detail = ProgressLine(entry.value("progress", nlohmann::json()));
        break;
      case SpoolState::kDone:
        detail = entry.value("output", "");
        break;
      case SpoolState::kFailed:
        detail = entry.value("reason", "");
        break;
    }
    std::printf("%s\t%s\t%s\n", e.id.c_str(), Name(e.state), detail.c_str());
  }
  if (json) std::printf("%s\n", DumpJson(all, 2).c_str());
  return kExitOk;
}

int StatusCommand(const std::string& id, bool follow, bool json, const Config& config) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "status")) return kExitFailed;
  if (id.empty()) {
    nlohmann::json counts = nlohmann::json::object();
    for (SpoolState state : kSpoolStates) counts[Name(state)] = 0;
    for (const SpoolEntry& e : spool.All())
      counts[Name(e.state)] = counts[Name(e.state)].get<int>() + 1;
    nlohmann::json active = nlohmann::json::array();
    for (const SpoolEntry& e : spool.Active()) active.push_back(EntryJson(e));
    if (json) {
      std::printf(
          "%s\n",
          DumpJson({{"spool", spool.root()}, {"counts", counts}, {"active", active}}, 2).c_str());
      return kExitOk;
    }
    auto count = [&](SpoolState state) { return counts[Name(state)].get<int>(); };
    std::printf("spool %s: %d waiting, %d active, %d done, %d failed\n", spool.root().c_str(),
                count(SpoolState::kIncoming), count(SpoolState::kActive), count(SpoolState::kDone),
                count(SpoolState::kFailed));
    for (const nlohmann::json& a : active) {
      nlohmann::json p = a.value("progress", nlohmann::json());
      std::printf("  %s: %s\n", a.value("id", "").c_str(), ProgressLine(p).c_str());
      for (const std::string& line : ProgressWorkerLines(p)) std::printf("    %s\n", line.c_str());
    }
    return kExitOk;
  }
  bool tty = ::isatty(1) != 0;
  while (true) {
    Result<SpoolEntry> e = spool.Find(id);
    if (!e.ok()) {
      std::fprintf(stderr, "framemill status: %s\n", e.status().message().c_str());
      return kExitNoSuchJob;
    }
    if (json) {
      nlohmann::json entry = EntryJson(*e);
      if (Ended(e->state)) entry["result"] = ReadJson(e->path + "/result.json");
      std::printf("%s\n", DumpJson(entry, 2).c_str());
      return e->state == SpoolState::kFailed ? kExitFailed : kExitOk;
    }
    if (e->state == SpoolState::kActive) {
      std::printf(tty && follow ? "\r%s: active, %s   " : "%s: active, %s\n", id.c_str(),
                  ProgressLine(ReadJson(e->path + "/progress.json")).c_str());
      std::fflush(stdout);
    } else if (e->state == SpoolState::kIncoming) {
      std::printf("%s: waiting (priority %d)\n", id.c_str(), e->priority);
    } else {
      if (tty && follow) std::printf("\n");
      std::printf("%s\n", DumpJson(ReadJson(e->path + "/result.json"), 2).c_str());
      return e->state == SpoolState::kDone ? kExitOk : kExitFailed;
    }
    if (!follow) return kExitOk;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

namespace {

// Asks the service to `action` job `id` (spool_requests.h) and waits a little for it to act:
// 0 when it did (`acted` says so from the spool), 1 when it refused, 0 with a note when the
// service has not read the request yet (it will when it runs).
int Request(RequestAction action, const std::string& id, const Config& config,
            const std::function<bool(const Spool&)>& acted) {
  const char* name = Name(action);
  Spool spool(config.spool_dir);
  Result<std::string> path = spool.PutRequest({{"version", 1}, {"action", name}, {"job", id}});
  if (!path.ok()) {
    std::fprintf(stderr, "framemill %s: %s\n", name, path.status().ToString().c_str());
    return kExitFailed;
  }
  for (int i = 0; i < 100 && PathExists(*path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (PathExists(*path)) {
    std::printf("%s: %s requested; the service acts on it when it runs\n", id.c_str(), name);
    return kExitOk;
  }
  if (!acted(spool)) {
    std::fprintf(stderr,
                 "framemill %s: the service refused to %s job %s (its log says why: only the "
                 "submitter or an admin may)\n",
                 name, name, id.c_str());
    return kExitFailed;
  }
  std::printf("%s: %s\n", id.c_str(), action == RequestAction::kCancel ? "cancelled" : "retried");
  return kExitOk;
}

}  // namespace

int CancelCommand(const std::string& id, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Find(id);
  if (!e.ok()) {
    std::fprintf(stderr, "framemill cancel: %s\n", e.status().message().c_str());
    return kExitNoSuchJob;
  }
  if (Ended(e->state)) {
    std::fprintf(stderr, "framemill cancel: job %s already ended (%s)\n", id.c_str(),
                 Name(e->state));
    return kExitFailed;
  }
  // The service files a waiting job as cancelled at once; a running one gets the `cancel`
  // marker and stops its chunks within a fraction of a second.
  return Request(RequestAction::kCancel, id, config, [&](const Spool& s) {
    Result<SpoolEntry> now = s.Find(id);
    return now.ok() && (now->state == SpoolState::kFailed || PathExists(now->path + "/cancel"));
  });
}

int RetryCommand(const std::string& id, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Find(id);
  if (!e.ok()) {
    std::fprintf(stderr, "framemill retry: %s\n", e.status().message().c_str());
    return kExitNoSuchJob;
  }
  if (e->state != SpoolState::kFailed) {
    std::fprintf(stderr, "framemill retry: job %s is %s, not failed\n", id.c_str(), Name(e->state));
    return kExitFailed;
  }
  return Request(RequestAction::kRetry, id, config, [&](const Spool& s) {
    Result<SpoolEntry> now = s.Find(id);
    return now.ok() && now->state != SpoolState::kFailed;
  });
}

}  // namespace framemill
