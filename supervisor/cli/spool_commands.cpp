#include "supervisor/cli/spool_commands.h"

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
#include "supervisor/cli/job_args.h"
#include "supervisor/spool/spool.h"
#include "supervisor/spool/spool_requests.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

// Progress older than this is named (the service rewrites it every few seconds while it runs).
constexpr double kStaleProgressS = 120.0;

nlohmann::json ReadJson(const std::string& path) {
  Result<nlohmann::json> j = ReadJsonFile(path, 16 << 20, StatusCode::kIo);
  return j.ok() ? *j : nlohmann::json();
}

// The fields `list --json` gives each job and `status --json` each active one: id, state,
// priority, submitted (Unix seconds), and by state progress (active), output (done) or reason
// (failed: the reason code).
// Seconds since `path` was last written (wall clock, for people); -1 when it is not there.
double AgeSeconds(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
         static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
}

// An active job's fields: "service_pid" (the supervisor serving the spool, null when none runs:
// the job waits for the next start) and "progress_age_s" (since progress.json was written).
// `serving_pid`: Spool::ServingPid().
nlohmann::json EntryJson(const SpoolEntry& e, int serving_pid) {
  nlohmann::json j = {{"id", e.id},
                      {"state", Name(e.state)},
                      {"priority", e.priority},
                      {"submitted", static_cast<double>(e.submitted_ns) / 1e9}};
  if (e.state == SpoolState::kActive) {
    j["progress"] = ReadJson(e.path + "/progress.json");
    // Unknown (-1) reads as served: never claim a service is down without knowing.
    j["service_pid"] = serving_pid != 0 ? nlohmann::json(serving_pid) : nlohmann::json(nullptr);
    const double age = AgeSeconds(e.path + "/progress.json");
    j["progress_age_s"] = age >= 0 ? nlohmann::json(age) : nlohmann::json(nullptr);
  }
  if (e.state == SpoolState::kDone) j["output"] = ResultOutput(ReadJson(e.path + "/result.json"));
  if (e.state == SpoolState::kFailed) {
    j["reason"] = ResultReasonCode(ReadJson(e.path + "/result.json"));
  }
  return j;
}

// An active job as people read it (EntryJson's fields): its progress while a service runs; what
// it had done and that it waits for the service when none does, never a rate or an ETA then.
std::string ActiveLine(const nlohmann::json& entry) {
  const nlohmann::json progress = entry.value("progress", nlohmann::json());
  const nlohmann::json age = entry.value("progress_age_s", nlohmann::json());
  if (entry.value("service_pid", nlohmann::json()).is_null()) {
    std::string line = "interrupted: no framemill service is running on this spool; the job "
                       "continues from its finished segments when it starts again";
    if (progress.is_object()) {
      // Frames written: what was done and is kept (the model's count runs ahead).
      const auto number = [&](const char* key, const char* otherwise) {
        const auto it = progress.find(key);
        if (it != progress.end() && it->is_number_integer()) return it->get<int64_t>();
        const auto other = progress.find(otherwise);
        return other != progress.end() && other->is_number_integer() ? other->get<int64_t>()
                                                                     : int64_t{0};
      };
      line += " (at its last report " +
              std::to_string(number("frames_written", "frames_done")) + "/" +
              std::to_string(number("frames_total", "frames_total")) + " frames written";
      if (age.is_number()) line += ", " + DurationText(age.get<double>()) + " ago";
      line += ")";
    }
    return line;
  }
  std::string line = "active, " + ProgressLine(progress);
  // The service writes progress.json every few seconds while a job runs.
  if (age.is_number() && age.get<double>() > kStaleProgressS) {
    line += "; no progress reported for " + DurationText(age.get<double>());
  }
  return line;
}

// An ended job's result.json in a few lines (the document itself: status --json). Any value of
// a damaged file reads as missing.
std::string ResultText(const std::string& id, const nlohmann::json& r) {
  if (!r.is_object()) return id + ": ended, but its result.json cannot be read\n";
  auto text = [&](const char* key) {
    const auto it = r.find(key);
    return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&](const char* key) {
    const auto it = r.find(key);
    return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  if (text("status") != "done") {
    const std::string code = ResultReasonCode(r);
    const auto reason = r.find("reason");
    const std::string message =
        reason != r.end() && reason->is_object() && reason->contains("message") &&
                (*reason)["message"].is_string()
            ? (*reason)["message"].get<std::string>()
            : std::string();
    std::string out = id + (code == StatusCodeName(StatusCode::kCancelled) ? ": " : ": failed: ") +
                      (code.empty() ? std::string("unknown") : code) + ": " + message + "\n";
    const auto kept = r.find("work_kept");
    if (kept != r.end() && kept->is_boolean() && kept->get<bool>()) {
      out += "  finished segments kept: `framemill retry " + id + "` continues from them\n";
    }
    return out;
  }
  const double seconds = number("seconds");
  const double frames = number("frames"), kept = number("frames_resumed");
  char rate[64];
  std::snprintf(rate, sizeof(rate), " (%.1f fps)", seconds > 0 ? (frames - kept) / seconds : 0.0);
  std::string out = id + ": done: " + text("output") + "\n  " +
                    std::to_string(static_cast<int64_t>(frames)) + " frames in " +
                    DurationText(seconds) + rate;
  if (const double segments = number("segments_resumed"); segments > 0) {
    out += ", resumed: " + std::to_string(static_cast<int64_t>(segments)) + " of " +
           std::to_string(static_cast<int64_t>(number("segments"))) +
           " segments kept from an earlier run";
  }
  auto count = [&](const char* key) { return std::to_string(static_cast<int64_t>(number(key))); };
  out += "\n  workers started " + count("workers_started") + ", recycled " + count("recycles") +
         ", crashed " + count("crashes") + ", killed " + count("kills") + "; chunks retried " +
         count("chunk_retries") + "\n";
  const auto warnings = r.find("warnings");
  if (warnings != r.end() && warnings->is_array()) {
    for (const nlohmann::json& w : *warnings) {
      if (w.is_string()) out += "  warning: " + w.get<std::string>() + "\n";
    }
  }
  out += "  (the whole result: framemill status " + id + " --json)\n";
  return out;
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

int ListCommand(const Config& config, bool json, const std::string& state) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "list")) return kExitFailed;
  nlohmann::json all = nlohmann::json::array();
  const int serving = spool.ServingPid();
  if (!json) std::printf("ID\tSTATE\tDETAIL\n");
  for (const SpoolEntry& e : spool.All()) {
    nlohmann::json entry = EntryJson(e, serving);
    // A cancelled job is filed under failed/ with reason `cancelled`, and shown as cancelled.
    const bool cancelled = e.state == SpoolState::kFailed &&
                           entry.value("reason", "") == StatusCodeName(StatusCode::kCancelled);
    const std::string shown = cancelled ? "cancelled" : Name(e.state);
    if (!state.empty() && state != shown) continue;
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
        detail = ActiveLine(entry);
        break;
      case SpoolState::kDone:
        detail = entry.value("output", "");
        break;
      case SpoolState::kFailed:
        detail = entry.value("reason", "");
        break;
    }
    std::printf("%s\t%s\t%s\n", e.id.c_str(), shown.c_str(), detail.c_str());
  }
  if (json) std::printf("%s\n", DumpJson(all, 2).c_str());
  return kExitOk;
}

int StatusCommand(const std::string& id_or_prefix, bool follow, bool json, const Config& config) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "status")) return kExitFailed;
  if (id_or_prefix.empty()) {
    nlohmann::json counts = nlohmann::json::object();
    for (SpoolState state : kSpoolStates) counts[Name(state)] = 0;
    for (const SpoolEntry& e : spool.All())
      counts[Name(e.state)] = counts[Name(e.state)].get<int>() + 1;
    const int serving = spool.ServingPid();
    nlohmann::json active = nlohmann::json::array();
    for (const SpoolEntry& e : spool.Active()) active.push_back(EntryJson(e, serving));
    if (json) {
      std::printf("%s\n", DumpJson({{"spool", spool.root()},
                                     {"service_pid", serving != 0 ? nlohmann::json(serving)
                                                                  : nlohmann::json(nullptr)},
                                     {"counts", counts},
                                     {"active", active}},
                                    2)
                               .c_str());
      return kExitOk;
    }
    auto count = [&](SpoolState state) { return counts[Name(state)].get<int>(); };
    std::printf("spool %s: %d waiting, %d active, %d done, %d failed; %s\n", spool.root().c_str(),
                count(SpoolState::kIncoming), count(SpoolState::kActive), count(SpoolState::kDone),
                count(SpoolState::kFailed),
                serving > 0    ? ("served by pid " + std::to_string(serving)).c_str()
                : serving == 0 ? "no service running"
                               : "whether a service runs is unknown (no /proc/locks)");
    for (const nlohmann::json& a : active) {
      std::printf("  %s: %s\n", a.value("id", "").c_str(), ActiveLine(a).c_str());
      if (a.value("service_pid", nlohmann::json()).is_null()) continue;  // no live workers
      for (const std::string& line : ProgressWorkerLines(a.value("progress", nlohmann::json()))) {
        std::printf("    %s\n", line.c_str());
      }
    }
    return kExitOk;
  }
  bool tty = ::isatty(1) != 0;
  Result<SpoolEntry> resolved = spool.Resolve(id_or_prefix);
  if (!resolved.ok()) {
    std::fprintf(stderr, "framemill status: %s\n", resolved.status().message().c_str());
    return kExitNoSuchJob;
  }
  const std::string id = resolved->id;
  while (true) {
    Result<SpoolEntry> e = spool.Find(id);
    if (!e.ok()) {
      std::fprintf(stderr, "framemill status: %s\n", e.status().message().c_str());
      return kExitNoSuchJob;
    }
    if (json) {
      nlohmann::json entry = EntryJson(*e, spool.ServingPid());
      if (Ended(e->state)) entry["result"] = ReadJson(e->path + "/result.json");
      std::printf("%s\n", DumpJson(entry, 2).c_str());
      return e->state == SpoolState::kFailed ? kExitFailed : kExitOk;
    }
    if (e->state == SpoolState::kActive) {
      std::printf(tty && follow ? "\r%s: %s   " : "%s: %s\n", id.c_str(),
                  ActiveLine(EntryJson(*e, spool.ServingPid())).c_str());
      std::fflush(stdout);
    } else if (e->state == SpoolState::kIncoming) {
      std::printf("%s: waiting (priority %d)%s\n", id.c_str(), e->priority,
                  spool.ServingPid() != 0 ? "" : "; no framemill service is running on this spool");
    } else {
      if (tty && follow) std::printf("\n");
      std::fputs(ResultText(id, ReadJson(e->path + "/result.json")).c_str(), stdout);
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
// `refused`: why the service refused, when the client knows better than "only the submitter or
// an admin may" ("" = that).
int Request(RequestAction action, const std::string& id, const Config& config,
            const std::function<bool(const Spool&)>& acted, const std::string& refused = "") {
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
    if (!refused.empty()) {
      std::fprintf(stderr, "framemill %s: %s\n", name, refused.c_str());
      return kExitFailed;
    }
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

int CancelCommand(const std::string& id_or_prefix, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Resolve(id_or_prefix);
  const std::string id = e.ok() ? e->id : id_or_prefix;
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

int RetryCommand(const std::string& id_or_prefix, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Resolve(id_or_prefix);
  const std::string id = e.ok() ? e->id : id_or_prefix;
  if (!e.ok()) {
    std::fprintf(stderr, "framemill retry: %s\n", e.status().message().c_str());
    return kExitNoSuchJob;
  }
  if (e->state != SpoolState::kFailed) {
    std::fprintf(stderr, "framemill retry: job %s is %s, not failed\n", id.c_str(), Name(e->state));
    return kExitFailed;
  }
  // The service decides (and logs who asked); a refusal of a job that cannot be retried names
  // the real reason, where this user may read it.
  const std::string reason = ResultReasonCode(ReadJson(e->path + "/result.json"));
  std::string refused;
  if (!reason.empty() && !RetryableReason(reason)) {
    refused = "job " + id +
              (reason == StatusCodeName(StatusCode::kCancelled) ? " was cancelled"
                                                                : " failed with " + reason) +
              "; it is not retried (submit it again, mended)";
  }
  return Request(
      RequestAction::kRetry, id, config,
      [&](const Spool& s) {
        Result<SpoolEntry> now = s.Find(id);
        return now.ok() && now->state != SpoolState::kFailed;
      },
      refused);
}

}  // namespace framemill
