#include "supervisor/job/warm_key.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/checked_file.h"
#include "common/json_fields.h"

namespace framemill {
namespace {

// The settings as the workers are told them (a spare's load request: the model's part and the
// device), one word each.
std::string LaunchKey(const WorkerLaunch& launch) {
  std::string key;
  for (const std::string& word : EncodeLoadRequest(launch)) key += word + " ";
  return key;
}

}  // namespace

FileIdentity IdentifyFile(int fd) {
  FileIdentity id;
  id.real_path = FdRealPath(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return id;
  id.dev = static_cast<uint64_t>(st.st_dev);
  id.ino = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<int64_t>(st.st_size);
  id.mtime_s = static_cast<int64_t>(st.st_mtim.tv_sec);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_nsec);
  return id;
}

std::string LogDirKey(const std::string& worker_log_dir, const FileIdentity& scratch_dir) {
  if (!worker_log_dir.empty()) return worker_log_dir;
  return "scratch " + std::to_string(scratch_dir.dev) + ":" + std::to_string(scratch_dir.ino);
}

WorkerLaunch JobLaunch(const JobSettings& settings) {
  WorkerLaunch launch;
  launch.device = settings.device;
  launch.precision = settings.precision;
  launch.optimization = settings.model_optimization;
  launch.cudnn_autotune = settings.cudnn_autotune;
  launch.tile = settings.tile;
  return launch;
}

std::string WarmKey(uint32_t submitter_uid, const FileIdentity& model, const JobSettings& settings,
                    const std::string& log_dir_key) {
  return "uid " + std::to_string(submitter_uid) + "|" + model.real_path + "|" +
         std::to_string(model.dev) + ":" + std::to_string(model.ino) + "|" +
         std::to_string(model.size) + "|" + std::to_string(model.mtime_s) + "." +
         std::to_string(model.mtime_ns) + "|" + LaunchKey(JobLaunch(settings)) + "|" +
         std::to_string(settings.workers) + "|" +
         // The probe square (--probe-size) differs in face mode.
         Name(settings.mode) + ":" + std::to_string(settings.faces.size) + "|" +
         DumpJson(nlohmann::json(settings.gpus)) + "|" + log_dir_key;
}

const char* Name(WarmChoice choice) {
  switch (choice) {
    case WarmChoice::kStartFresh:
      return "start fresh";
    case WarmChoice::kReuse:
      return "reuse";
    case WarmChoice::kReplace:
      return "replace";
  }
  return "?";
}

WarmChoice ChooseWarm(bool have_pool, const std::string& pool_key, const std::string& job_key) {
  if (!have_pool) return WarmChoice::kStartFresh;
  return pool_key == job_key ? WarmChoice::kReuse : WarmChoice::kReplace;
}

}  // namespace framemill
