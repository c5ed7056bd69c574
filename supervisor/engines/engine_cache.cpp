#include "supervisor/engines/engine_cache.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/model_card.h"
#include "common/sha256.h"
#include "supervisor/process/program_answers.h"

namespace framemill {
namespace {

constexpr char kPackage[] = "engine.pt2";
constexpr char kManifest[] = "manifest.json";
constexpr char kBuildPrefix[] = ".build-";

// This user's, and no one else may write it.
bool OnlyMine(const struct stat& st) {
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::vector<std::string> Folders(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<nlohmann::json> ReadManifest(const std::string& folder) {
  std::ifstream in(folder + "/" + kManifest);
  if (!in) return Status(StatusCode::kIo, folder + "/" + kManifest + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("sha256") ||
      !j["sha256"].is_string()) {
    return Status(StatusCode::kIo, folder + "/" + kManifest + ": not an engine manifest");
  }
  return j;
}

CachedEngine EntryOf(const std::string& id, const std::string& folder, const nlohmann::json& m) {
  CachedEngine e;
  e.id = id;
  e.folder = folder;
  e.key_text = ValueOr<std::string>(m, "key", "");
  e.sha256 = ValueOr<std::string>(m, "sha256", "");
  e.bytes = ValueOr(m, "bytes", int64_t{0});
  e.built_at = ValueOr<std::string>(m, "built_at", "");
  e.build_seconds = ValueOr(m, "build_seconds", 0.0);
  return e;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string EngineCacheDir() {
  const std::string root = ProgramAnswersDir();
  return root.empty() ? "" : root + "/engines";
}

Result<std::optional<CachedEngine>> FindEngine(const std::string& cache_dir, const EngineKey& key,
                                               UniqueFd* package, int* scale) {
  const std::string folder = cache_dir + "/" + key.Id();
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return std::optional<CachedEngine>();
  auto refuse = [&](const std::string& why) {
    return Status(StatusCode::kModelInvalid, "compiled engine " + folder + ": " + why);
  };
  if (!S_ISDIR(st.st_mode) || !OnlyMine(st)) return refuse("not a folder of this user's alone");
  Result<nlohmann::json> manifest = ReadManifest(folder);
  if (!manifest.ok()) return refuse(manifest.status().message());
  if ((*manifest)["key"] != key.Text()) return refuse("its manifest names another key");
  UniqueFd fd(::open((folder + "/" + kPackage).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return refuse(std::string(kPackage) + ": " + std::strerror(errno));
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !OnlyMine(st)) {
    return refuse(std::string(kPackage) + " is not a file of this user's alone");
  }
  Result<std::string> sha = Sha256OfFile(FdPath(fd.get()));
  if (!sha.ok()) return refuse(sha.status().message());
  if (*sha != (*manifest)["sha256"]) {
    return refuse(std::string(kPackage) + " has sha256 " + *sha + ", its manifest says " +
                  (*manifest)["sha256"].get<std::string>() + " (changed since it was built)");
  }
  Result<std::optional<ModelCard>> card = LoadModelCard(folder + "/" + kPackage);
  if (!card.ok()) return refuse(card.status().message());
  *scale = card->has_value() ? (*card)->scale : 1;
  *package = std::move(fd);
  return std::optional<CachedEngine>(EntryOf(key.Id(), folder, *manifest));
}

std::vector<CachedEngine> ListEngines(const std::string& cache_dir) {
  std::vector<CachedEngine> list;
  for (const std::string& name : Folders(cache_dir)) {
    if (name.rfind(kBuildPrefix, 0) == 0) continue;
    const std::string folder = cache_dir + "/" + name;
    Result<nlohmann::json> m = ReadManifest(folder);
    CachedEngine e;
    if (m.ok()) {
      e = EntryOf(name, folder, *m);
    } else {
      e.id = name;
      e.folder = folder;
    }
    list.push_back(std::move(e));
  }
  return list;
}

Result<int> ClearEngines(const std::string& cache_dir) {
  int removed = 0;
  for (const std::string& name : Folders(cache_dir)) {
    FM_RETURN_IF_ERROR(RemoveTree(cache_dir + "/" + name));
    if (name.rfind(kBuildPrefix, 0) != 0) ++removed;
  }
  return removed;
}

Result<UniqueFd> LockEngineKey(const std::string& cache_dir, const EngineKey& key,
                               const std::atomic<bool>* stop) {
  const std::string path = cache_dir + "/.lock-" + key.Id();
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Status(StatusCode::kIo, path + ": " + std::strerror(errno));
  for (bool said = false; ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0; said = true) {
    if (errno != EWOULDBLOCK) return Status(StatusCode::kIo, path + ": " + std::strerror(errno));
    if (!said) spdlog::info("engine {}: another build of it runs; waiting for it", key.Id());
    if (stop != nullptr && stop->load()) return Status(StatusCode::kCancelled, "stopped");
    ::usleep(200 * 1000);
  }
  return fd;
}

Result<CachedEngine> KeepEngine(const std::string& cache_dir, const std::string& build_folder,
                                const EngineKey& key, double build_seconds) {
  const std::string package = build_folder + "/" + kPackage;
  Result<std::string> sha = Sha256OfFile(package);
  if (!sha.ok()) return sha.status();
  struct stat st {};
  if (::stat(package.c_str(), &st) != 0) {
    return Status(StatusCode::kIo, package + ": " + std::strerror(errno));
  }
  nlohmann::json m = {{"key", key.Text()},
                      {"sha256", *sha},
                      {"bytes", int64_t{st.st_size}},
                      {"built_at", UtcNow()},
                      {"build_seconds", build_seconds},
                      {"describe", key.Describe()}};
  FM_RETURN_IF_ERROR(AtomicWriteFile(build_folder + "/" + kManifest, m.dump(2) + "\n", 0600));
  const std::string folder = cache_dir + "/" + key.Id();
  if (PathExists(folder)) FM_RETURN_IF_ERROR(RemoveTree(folder));
  FM_RETURN_IF_ERROR(DurableRename(build_folder, folder));
  return EntryOf(key.Id(), folder, m);
}

}  // namespace framemill
