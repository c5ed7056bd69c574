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
#include "supervisor/front/spool.h"
#include "supervisor/front/spool_requests.h"

namespace framemill {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  Result<nlohmann::json> j = ReadJsonFile(path, 16 << 20, StatusCode::kIo);
  return j.ok() ? *j : nlohmann::json();
}

// A value on the command line: JSON when it parses (numbers, true, objects), else a string.
nlohmann::json CliValue(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return text;
  }
}

std::string ProgressLine(const nlohmann::json& p) {
  if (!p.is_object()) return "starting";
  int64_t done = p.value("frames_done", int64_t{0}), total = p.value("frames_total", int64_t{0});
  double fps = p.value("fps", 0.0);
  char buf[160];
  double eta = fps > 0 ? static_cast<double>(total - done) / fps : 0.0;
  std::snprintf(buf, sizeof(buf), "%lld/%lld frames (%.1f%%), %.1f fps, ETA %.0f s",
                static_cast<long long>(done), static_cast<long long>(total),
                total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0,
                fps, eta);
  return buf;
}

// The fields `list --json` gives each job and `status --json` each active one: id, state,
// priority, submitted (Unix seconds), and by state progress (active), output (done) or reason
// (failed: the reason code).
nlohmann::json EntryJson(const SpoolEntry& e) {
  nlohmann::json j = {{"id", e.id},
                      {"state", e.state},
                      {"priority", e.priority},
                      {"submitted", static_cast<double>(e.submitted_ns) / 1e9}};
  if (e.state == "active") j["progress"] = ReadJson(e.path + "/progress.json");
  if (e.state == "done" || e.state == "failed") {
    nlohmann::json r = ReadJson(e.path + "/result.json");
    if (!r.is_object()) r = nlohmann::json::object();
    if (e.state == "done") j["output"] = r.value("output", "");
    if (e.state == "failed") {
      nlohmann::json reason = r.value("reason", nlohmann::json::object());
      j["reason"] = reason.is_object() ? reason.value("code", "") : "";
    }
  }
  return j;
}

// A client's spool must exist and be readable: an empty listing of a spool that is not there
// would hide a wrong config or a service that never started. Prints why and returns false.
bool SpoolUsable(const Spool& spool, const char* command) {
  const std::string incoming = spool.Dir("incoming");
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
  nlohmann::json job = nlohmann::json::object();
  job["input"] = ResolvePath(args.input);
  job["model"] = ResolvePath(args.model);
  job["output"] = ResolvePath(args.output);
  if (!args.priority.empty()) job["priority"] = CliValue(args.priority);
  for (const std::string& kv : args.settings) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "framemill submit: %s is not a key=value job setting\n", kv.c_str());
      return 2;
    }
    job[kv.substr(0, eq)] = CliValue(kv.substr(eq + 1));
  }
  Result<JobSpec> parsed = ParseJob(job, config.defaults);
  if (!parsed.ok()) {
    std::fprintf(stderr, "framemill submit: job rejected: %s\n",
                 parsed.status().ToString().c_str());
    return 1;
  }
  // Nothing is created but the job file: a fresh install (tmpfiles made the spool, the service
  // never ran) takes jobs, and a client cannot create the service's folders anyway.
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "submit")) return 1;
  Result<std::string> id = spool.Submit(job);
  if (!id.ok()) {
    std::fprintf(stderr, "framemill submit: %s\n", id.status().ToString().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", DumpJson({{"id", *id}, {"state", "incoming"}, {"job", job}}, 2).c_str());
  } else {
    std::printf("%s\n", id->c_str());
  }
  return 0;
}

int ListCommand(const Config& config, bool json) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "list")) return 1;
  nlohmann::json all = nlohmann::json::array();
  for (const SpoolEntry& e : spool.All()) {
    nlohmann::json entry = EntryJson(e);
    if (json) {
      all.push_back(entry);
      continue;
    }
    std::string detail;
    if (e.state == "active") detail = ProgressLine(entry.value("progress", nlohmann::json()));
    if (e.state == "done") detail = entry.value("output", "");
    if (e.state == "failed") detail = entry.value("reason", "");
    if (e.state == "incoming") detail = "priority " + std::to_string(e.priority);
    std::printf("%s\t%s\t%s\n", e.id.c_str(), e.state.c_str(), detail.c_str());
  }
  if (json) std::printf("%s\n", DumpJson(all, 2).c_str());
  return 0;
}

int StatusCommand(const std::string& id, bool follow, bool json, const Config& config) {
  Spool spool(config.spool_dir);
  if (!SpoolUsable(spool, "status")) return 1;
  if (id.empty()) {
    nlohmann::json counts = {{"incoming", 0}, {"active", 0}, {"done", 0}, {"failed", 0}};
    for (const SpoolEntry& e : spool.All()) counts[e.state] = counts.value(e.state, 0) + 1;
    nlohmann::json active = nlohmann::json::array();
    for (const SpoolEntry& e : spool.Active()) active.push_back(EntryJson(e));
    if (json) {
      std::printf(
          "%s\n",
          DumpJson({{"spool", spool.root()}, {"counts", counts}, {"active", active}}, 2).c_str());
      return 0;
    }
    std::printf("spool %s: %d waiting, %d active, %d done, %d failed\n", spool.root().c_str(),
                counts["incoming"].get<int>(), counts["active"].get<int>(),
                counts["done"].get<int>(), counts["failed"].get<int>());
    for (const nlohmann::json& a : active) {
      nlohmann::json p = a.value("progress", nlohmann::json());
      std::printf("  %s: %s\n", a.value("id", "").c_str(), ProgressLine(p).c_str());
      if (!p.is_object()) continue;
      for (const nlohmann::json& w : p.value("workers", nlohmann::json::array())) {
        std::printf(
            "    worker %d gen %d pid %d: %lld frames, rss %.0f MiB, gpu reserved %.0f MiB\n",
            w.value("worker", 0), w.value("gen", 0), w.value("pid", 0),
            static_cast<long long>(w.value("frames", int64_t{0})), w.value("rss_mb", 0.0),
            w.value("gpu_reserved_mb", 0.0));
      }
    }
    return 0;
  }
  bool tty = ::isatty(1) != 0;
  while (true) {
    Result<SpoolEntry> e = spool.Find(id);
    if (!e.ok()) {
      std::fprintf(stderr, "framemill status: %s\n", e.status().message().c_str());
      return kExitNoSuchJob;
    }
    const bool ended = e->state == "done" || e->state == "failed";
    if (json) {
      nlohmann::json entry = EntryJson(*e);
      if (ended) entry["result"] = ReadJson(e->path + "/result.json");
      std::printf("%s\n", DumpJson(entry, 2).c_str());
      return e->state == "failed" ? 1 : 0;
    }
    if (e->state == "active") {
      std::printf(tty && follow ? "\r%s: active, %s   " : "%s: active, %s\n", id.c_str(),
                  ProgressLine(ReadJson(e->path + "/progress.json")).c_str());
      std::fflush(stdout);
    } else if (e->state == "incoming") {
      std::printf("%s: waiting (priority %d)\n", id.c_str(), e->priority);
    } else {
      if (tty && follow) std::printf("\n");
      std::printf("%s\n", DumpJson(ReadJson(e->path + "/result.json"), 2).c_str());
      return e->state == "done" ? 0 : 1;
    }
    if (!follow) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

namespace {

// Asks the service to `action` job `id` (spool_requests.h) and waits a little for it to act:
// 0 when it did (`acted` says so from the spool), 1 when it refused, 0 with a note when the
// service has not read the request yet (it will when it runs).
int Request(RequestAction action, const std::string& id, const Config& config,
            const std::function<bool(const Spool&)>& acted) {
  const char* name = RequestActionName(action);
  Spool spool(config.spool_dir);
  Result<std::string> path = spool.PutRequest({{"version", 1}, {"action", name}, {"job", id}});
  if (!path.ok()) {
    std::fprintf(stderr, "framemill %s: %s\n", name, path.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < 100 && PathExists(*path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (PathExists(*path)) {
    std::printf("%s: %s requested; the service acts on it when it runs\n", id.c_str(), name);
    return 0;
  }
  if (!acted(spool)) {
    std::fprintf(stderr,
                 "framemill %s: the service refused to %s job %s (its log says why: only the "
                 "submitter or an admin may)\n",
                 name, name, id.c_str());
    return 1;
  }
  std::printf("%s: %s\n", id.c_str(), action == RequestAction::kCancel ? "cancelled" : "retried");
  return 0;
}

}  // namespace

int CancelCommand(const std::string& id, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Find(id);
  if (!e.ok()) {
    std::fprintf(stderr, "framemill cancel: %s\n", e.status().message().c_str());
    return kExitNoSuchJob;
  }
  if (e->state != "incoming" && e->state != "active") {
    std::fprintf(stderr, "framemill cancel: job %s already ended (%s)\n", id.c_str(),
                 e->state.c_str());
    return 1;
  }
  // The service files a waiting job as cancelled at once; a running one gets the `cancel`
  // marker and stops its chunks within a fraction of a second.
  return Request(RequestAction::kCancel, id, config, [&](const Spool& s) {
    Result<SpoolEntry> now = s.Find(id);
    return now.ok() && (now->state == "failed" || PathExists(now->path + "/cancel"));
  });
}

int RetryCommand(const std::string& id, const Config& config) {
  Spool spool(config.spool_dir);
  Result<SpoolEntry> e = spool.Find(id);
  if (!e.ok()) {
    std::fprintf(stderr, "framemill retry: %s\n", e.status().message().c_str());
    return kExitNoSuchJob;
  }
  if (e->state != "failed") {
    std::fprintf(stderr, "framemill retry: job %s is %s, not failed\n", id.c_str(),
                 e->state.c_str());
    return 1;
  }
  return Request(RequestAction::kRetry, id, config, [&](const Spool& s) {
    Result<SpoolEntry> now = s.Find(id);
    return now.ok() && now->state != "failed";
  });
}

}  // namespace framemill
