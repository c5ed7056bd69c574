#include "supervisor/spool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_fields.h"

namespace framemill {
namespace {

const char* const kStates[] = {"incoming", "active", "done", "failed"};

std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

int64_t MtimeNs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string SafeId(const std::string& name) {
  std::string id;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    id += ok ? c : '_';
  }
  if (id.empty() || id[0] == '.') id = "job" + id;
  return id.substr(0, 100);
}

}  // namespace

Spool::~Spool() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Spool::Prepare() {
  for (const char* s : kStates) FM_RETURN_IF_ERROR(MakeDirectories(Dir(s)));
  FM_RETURN_IF_ERROR(MakeDirectories(Dir("workers")));
  return MakeDirectories(Dir("tmp"));
}

Status Spool::Lock() {
  std::string path = root_ + "/lock";
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    return Status(StatusCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    (void)!::pread(lock_fd_, buf, sizeof(buf) - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    return Status(StatusCode::kIo, "spool " + root_ +
                                       " is already served by another framemill "
                                       "(pid " +
                                       std::string(buf[0] ? buf : "unknown") + ")");
  }
  std::string pid = std::to_string(::getpid());
  (void)!::ftruncate(lock_fd_, 0);
  (void)!::pwrite(lock_fd_, pid.data(), pid.size(), 0);
  return Status::Ok();
}

std::vector<SpoolEntry> Spool::Incoming() const {
  std::vector<SpoolEntry> jobs;
  for (const std::string& name : ListNames(Dir("incoming"))) {
    if (!EndsWith(name, ".json")) continue;
    SpoolEntry e;
    e.path = Dir("incoming") + "/" + name;
    e.id = name.substr(0, name.size() - 5);
    e.state = "incoming";
    e.submitted_ns = MtimeNs(e.path);
    Result<nlohmann::json> j = ReadJsonFile(e.path, kMaxJobFileBytes, StatusCode::kInvalidJob);
    if (j.ok() && j->is_object()) {
      auto p = j->find("priority");
      if (p != j->end() && p->is_number_integer()) e.priority = p->get<int>();
    }
    jobs.push_back(e);
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const SpoolEntry& a, const SpoolEntry& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.submitted_ns < b.submitted_ns;
  });
  return jobs;
}

std::vector<SpoolEntry> Spool::Active() const {
  std::vector<SpoolEntry> jobs;
  for (const std::string& id : ListNames(Dir("active"))) {
    SpoolEntry e{id, "active", JobDir("active", id), 0,
                 MtimeNs(JobDir("active", id) + "/job.json")};
    jobs.push_back(e);
  }
  std::sort(jobs.begin(), jobs.end(), [](const SpoolEntry& a, const SpoolEntry& b) {
    return a.submitted_ns < b.submitted_ns;
  });
  return jobs;
}

std::vector<SpoolEntry> Spool::All() const {
  std::vector<SpoolEntry> all = Incoming();
  for (const SpoolEntry& e : Active()) all.push_back(e);
  for (const char* state : {"done", "failed"}) {
    for (const std::string& id : ListNames(Dir(state))) {
      all.push_back({id, state, JobDir(state, id), 0, MtimeNs(JobDir(state, id) + "/job.json")});
    }
  }
  return all;
}

Result<SpoolEntry> Spool::Find(const std::string& id) const {
  for (const SpoolEntry& e : All()) {
    if (e.id == id) return e;
  }
  return Status(StatusCode::kInvalidJob, "no job " + id + " in spool " + root_);
}

std::string Spool::UniqueId(const std::string& wanted) const {
  std::string id = SafeId(wanted);
  auto taken = [&](const std::string& c) {
    for (const char* s : {"active", "done", "failed"}) {
      if (PathExists(JobDir(s, c))) return true;
    }
    return false;
  };
  if (!taken(id)) return id;
  for (int n = 2;; ++n) {
    std::string c = id + "-" + std::to_string(n);
    if (!taken(c)) return c;
  }
}

Result<std::string> Spool::Claim(const SpoolEntry& incoming) {
  std::string id = UniqueId(incoming.id);
  std::string dir = JobDir("active", id);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    return Status(StatusCode::kIo, "cannot create " + dir + ": " + std::strerror(errno));
  }
  Status s = DurableRename(incoming.path, dir + "/job.json");
  if (!s.ok()) {
    ::rmdir(dir.c_str());
    return s;
  }
  return id;
}

Status Spool::Finish(const std::string& id, bool ok, const nlohmann::json& result) {
  std::string from = JobDir("active", id);
  FM_RETURN_IF_ERROR(AtomicWriteFile(from + "/result.json", result.dump(2) + "\n"));
  ::unlink((from + "/progress.json").c_str());
  ::unlink((from + "/cancel").c_str());
  return DurableRename(from, JobDir(ok ? "done" : "failed", id));
}

Status Spool::FailIncoming(const SpoolEntry& incoming, const nlohmann::json& result) {
  Result<std::string> id = Claim(incoming);
  if (!id.ok()) return id.status();
  return Finish(*id, false, result);
}

Result<std::string> Spool::Submit(const nlohmann::json& job) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::mt19937_64 rng(std::random_device{}());
  char id[64];
  std::snprintf(
      id, sizeof(id), "%lld-%06llx",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now).count()),
      static_cast<unsigned long long>(rng() & 0xffffff));
  std::string tmp = Dir("tmp") + "/" + id + ".json";
  FM_RETURN_IF_ERROR(AtomicWriteFile(tmp, job.dump(2) + "\n"));
  FM_RETURN_IF_ERROR(DurableRename(tmp, Dir("incoming") + "/" + id + ".json"));
  return std::string(id);
}

}  // namespace framemill
