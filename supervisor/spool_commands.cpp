#include "supervisor/spool_commands.h"

#include <cstdint>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <unistd.h>

#include "common/file_util.h"
#include "common/job_spec.h"
#include "common/json_fields.h"
#include "supervisor/spool.h"
#include "supervisor/spool_requests.h"

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

}  // namespace

int SubmitCommand(const std::vector<std::string>& args, const Config& config) {
  nlohmann::json job = nlohmann::json::object();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : ""; };
    if (a == "--model")
      job["model"] = ResolvePath(next());
    else if (a == "--output")
      job["output"] = ResolvePath(next());
    else if (a == "--priority")
      job["priority"] = CliValue(next());
    else if (a.find('=') != std::string::npos) {
      job[a.substr(0, a.find('='))] = CliValue(a.substr(a.find('=') + 1));
    } else if (!job.contains("input")) {
      job["input"] = ResolvePath(a);
    } else {
      std::fprintf(stderr, "framemill submit: unexpected argument %s\n", a.c_str());
      return 2;
    }
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
  Result<std::string> id = spool.Submit(job);
  if (!id.ok()) {
    std::fprintf(stderr, "framemill submit: %s\n", id.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", id->c_str());
  return 0;
}

int ListCommand(const Config& config) {
  Spool spool(config.spool_dir);
  for (const SpoolEntry& e : spool.All()) {
    std::string detail;
    if (e.state == "active") detail = ProgressLine(ReadJson(e.path + "/progress.json"));
    if (e.state == "done" || e.state == "failed") {
      nlohmann::json r = ReadJson(e.path + "/result.json");
      detail = e.state == "done" ? r.value("output", "")
                                 : r.value("reason", nlohmann::json::object()).value("code", "");
    }
    if (e.state == "incoming") detail = "priority " + std::to_string(e.priority);
    std::printf("%s\t%s\t%s\n", e.id.c_str(), e.state.c_str(), detail.c_str());
  }
  return 0;
}

int StatusCommand(const std::vector<std::string>& args, const Config& config) {
  Spool spool(config.spool_dir);
  bool follow = false;
  std::string id;
  for (const std::string& a : args) {
    if (a == "--follow")
      follow = true;
    else
      id = a;
  }
  if (id.empty()) {
    int counts[4] = {0, 0, 0, 0};
    const char* states[] = {"incoming", "active", "done", "failed"};
    for (const SpoolEntry& e : spool.All()) {
      for (int i = 0; i < 4; ++i) counts[i] += e.state == states[i];
    }
    std::printf("spool %s: %d waiting, %d active, %d done, %d failed\n", spool.root().c_str(),
                counts[0], counts[1], counts[2], counts[3]);
    for (const SpoolEntry& e : spool.Active()) {
      nlohmann::json p = ReadJson(e.path + "/progress.json");
      std::printf("  %s: %s\n", e.id.c_str(), ProgressLine(p).c_str());
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
