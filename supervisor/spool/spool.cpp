#include "supervisor/spool/spool.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

// The spool's folders and their modes (see spool.h; systemd/framemill.tmpfiles.conf agrees).
struct Folder {
  const char* name;
  mode_t mode;
};
const Folder kFolders[] = {{Name(SpoolState::kIncoming), 01777},
                           {"tmp", 01733},
                           {"requests", 01733},
                           {Name(SpoolState::kActive), 0755},
                           {Name(SpoolState::kDone), 0755},
                           {Name(SpoolState::kFailed), 0755},
                           {"workers", 0750}};

Status Errno(const std::string& what) {
  return Status(errno == ENOSPC ? StatusCode::kNoSpace : StatusCode::kIo,
                what + ": " + std::strerror(errno));
}

// A job's folder: 0711 whatever the umask (the unit's UMask=0027), so that its submitter reaches
// the files granted to them by name (result.json, progress.json, the cancel marker) while no
// other user lists or reads it.
Status MakeJobDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0711) != 0) return Errno("create " + dir);
  if (::chmod(dir.c_str(), 0711) != 0) return Errno("chmod " + dir);
  return Status::Ok();
}

const char* FileType(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

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

int64_t ChangeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

// When the entry at `path` last changed (its ctime): set by the kernel at the rename into its
// folder and at every change since, so that no user can date it back (utimensat sets mtime).
int64_t ChangedNs(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return ChangeNs(st);
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

const char* Name(SpoolState state) {
  switch (state) {
    case SpoolState::kIncoming:
      return "incoming";
    case SpoolState::kActive:
      return "active";
    case SpoolState::kDone:
      return "done";
    case SpoolState::kFailed:
      return "failed";
  }
  return "unknown";
}

Spool::~Spool() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Spool::Prepare() {
  FM_RETURN_IF_ERROR(MakeDirectories(root_));
  for (const Folder& f : kFolders) {
    std::string dir = Dir(f.name);
    if (::mkdir(dir.c_str(), f.mode) != 0 && errno != EEXIST) return Errno("create " + dir);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return Errno("stat " + dir);
    if (!S_ISDIR(st.st_mode)) return Status(StatusCode::kIo, dir + ": not a directory");
    // mkdir's mode went through the umask, and an older spool may lack the sticky bits.
    if ((st.st_mode & 07777) != f.mode && st.st_uid == ::geteuid() &&
        ::chmod(dir.c_str(), f.mode) != 0) {
      return Errno("chmod " + dir);
    }
  }
  return Status::Ok();
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

int Spool::ServingPid() const {
  struct stat st {};
  if (::stat((root_ + "/lock").c_str(), &st) != 0) return 0;
  // "1: FLOCK  ADVISORY  WRITE 4242 fe:01:1234567 0 EOF": the holder's pid, then the file as
  // major:minor (hex) and inode.
  FILE* locks = std::fopen("/proc/locks", "re");
  if (locks == nullptr) return -1;
  // The pid the holder wrote into the lock file (Lock()): with the inode, it names the lock even
  // where /proc/locks gives another device than stat does (btrfs subvolumes).
  int written = 0;
  if (FILE* f = std::fopen((root_ + "/lock").c_str(), "re")) {
    if (std::fscanf(f, "%d", &written) != 1) written = 0;
    std::fclose(f);
  }
  int pid = 0;
  char line[256];
  while (pid == 0 && std::fgets(line, sizeof(line), locks) != nullptr) {
    char kind[16] = {}, mode[16] = {};
    int holder = 0;
    unsigned major_no = 0, minor_no = 0;
    unsigned long long inode = 0;
    if (std::sscanf(line, "%*[^:]: %15s %*s %15s %d %x:%x:%llu", kind, mode, &holder, &major_no,
                    &minor_no, &inode) == 6 &&
        std::strcmp(kind, "FLOCK") == 0 && std::strcmp(mode, "WRITE") == 0 && holder > 0 &&
        inode == st.st_ino &&
        ((major_no == major(st.st_dev) && minor_no == minor(st.st_dev)) || holder == written)) {
      pid = holder;
    }
  }
  std::fclose(locks);
  return pid;
}

std::vector<SpoolEntry> Spool::Incoming(IncomingCache* cache) const {
  std::vector<SpoolEntry> jobs;
  std::map<std::string, IncomingCache::Seen> seen;
  for (const std::string& name : ListNames(Dir(SpoolState::kIncoming))) {
    if (!EndsWith(name, ".json")) continue;
    SpoolEntry e;
    e.path = Dir(SpoolState::kIncoming) + "/" + name;
    e.id = name.substr(0, name.size() - 5);
    e.state = SpoolState::kIncoming;
    struct stat st {};
    if (::lstat(e.path.c_str(), &st) == 0) {
      e.inode = st.st_ino;
      e.uid = st.st_uid;
      e.submitted_ns = ChangeNs(st);
    }
    const IncomingCache::Seen now{e.inode, e.submitted_ns, static_cast<int64_t>(st.st_size), 0};
    const auto known = cache != nullptr ? cache->seen.find(name) : seen.end();
    if (cache != nullptr && known != cache->seen.end() && known->second.inode == now.inode &&
        known->second.changed_ns == now.changed_ns && known->second.size == now.size) {
      e.priority = known->second.priority;
    } else {
      Result<nlohmann::json> j = ReadJsonFile(e.path, kMaxJobFileBytes, StatusCode::kInvalidJob);
      if (j.ok() && j->is_object()) {
        auto p = j->find("priority");
        if (p != j->end() && p->is_number_integer()) e.priority = p->get<int>();
      }
    }
    seen[name] = {now.inode, now.changed_ns, now.size, e.priority};
    jobs.push_back(e);
  }
  if (cache != nullptr) cache->seen = std::move(seen);
  std::stable_sort(jobs.begin(), jobs.end(), [](const SpoolEntry& a, const SpoolEntry& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.submitted_ns < b.submitted_ns;
  });
  return jobs;
}

std::vector<SpoolEntry> Spool::Active() const {
  std::vector<SpoolEntry> jobs;
  for (const std::string& id : ListNames(Dir(SpoolState::kActive))) {
    SpoolEntry e{id, SpoolState::kActive, JobDir(SpoolState::kActive, id), 0,
                 ChangedNs(JobDir(SpoolState::kActive, id) + "/job.json")};
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
  for (SpoolState state : {SpoolState::kDone, SpoolState::kFailed}) {
    for (const std::string& id : ListNames(Dir(state))) {
      all.push_back({id, state, JobDir(state, id), 0, ChangedNs(JobDir(state, id) + "/job.json")});
    }
  }
  return all;
}

SpoolCounts Spool::Count() const {
  SpoolCounts c;
  for (const std::string& name : ListNames(Dir(SpoolState::kIncoming))) {
    if (!EndsWith(name, ".json")) continue;  // as Incoming() counts them
    ++c.incoming;
    int64_t ns = ChangedNs(Dir(SpoolState::kIncoming) + "/" + name);
    if (ns > 0 && (c.oldest_incoming_ns == 0 || ns < c.oldest_incoming_ns)) {
      c.oldest_incoming_ns = ns;
    }
  }
  c.active = static_cast<int64_t>(ListNames(Dir(SpoolState::kActive)).size());
  c.done = static_cast<int64_t>(ListNames(Dir(SpoolState::kDone)).size());
  c.failed = static_cast<int64_t>(ListNames(Dir(SpoolState::kFailed)).size());
  return c;
}

Result<SpoolEntry> Spool::Find(const std::string& id) const {
  for (const SpoolEntry& e : All()) {
    if (e.id == id) return e;
  }
  return Status(StatusCode::kInvalidJob, "no job " + id + " in spool " + root_);
}

Result<SpoolEntry> Spool::Resolve(const std::string& id) const {
  std::vector<SpoolEntry> matches;
  for (const SpoolEntry& e : All()) {
    if (e.id == id) return e;
    if (!id.empty() && e.id.compare(0, id.size(), id) == 0) matches.push_back(e);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty()) return Status(StatusCode::kInvalidJob, "no job " + id + " in spool " + root_);
  std::string names;
  for (size_t i = 0; i < matches.size() && i < 5; ++i) names += " " + matches[i].id;
  return Status(StatusCode::kInvalidJob,
                std::to_string(matches.size()) + " jobs begin with " + id + ":" + names +
                    (matches.size() > 5 ? " ..." : "") + "; give more of the id");
}

std::string Spool::UniqueId(const std::string& wanted) const {
  std::string id = SafeId(wanted);
  auto taken = [&](const std::string& c) {
    for (SpoolState s : {SpoolState::kActive, SpoolState::kDone, SpoolState::kFailed}) {
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

Result<ClaimedJob> Spool::Claim(const SpoolEntry& incoming) {
  const std::string what = "incoming/" + BaseName(incoming.path);
  int fd = ::open(incoming.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return ClaimedJob{};
    if (errno == ELOOP) return Status(StatusCode::kInvalidJob, what + ": a symbolic link");
    return Status(StatusCode::kInvalidJob, what + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxJobFileBytes) {
    std::string why = !S_ISREG(st.st_mode)
                          ? std::string(FileType(st.st_mode))
                          : std::to_string(st.st_size) + " bytes, more than the limit of " +
                                std::to_string(kMaxJobFileBytes);
    ::close(fd);
    return Status(StatusCode::kInvalidJob, what + ": " + why);
  }
  ::close(fd);
  ClaimedJob job{UniqueId(incoming.id), static_cast<uint32_t>(st.st_uid),
                 static_cast<uint32_t>(st.st_gid)};
  std::string dir = JobDir(SpoolState::kActive, job.id);
  FM_RETURN_IF_ERROR(MakeJobDir(dir));
  if (::rename(incoming.path.c_str(), (dir + "/job.json").c_str()) != 0) {
    Status s = errno == ENOENT ? Status::Ok() : Errno("claim " + incoming.path);
    ::rmdir(dir.c_str());
    if (s.ok()) return ClaimedJob{};
    return s;
  }
  FM_RETURN_IF_ERROR(SyncDirectory(dir));
  // Between the open and the rename the owner may have put another entry at the name: the one
  // moved is then not the one checked.
  struct stat moved {};
  if (::lstat((dir + "/job.json").c_str(), &moved) != 0 || moved.st_dev != st.st_dev ||
      moved.st_ino != st.st_ino) {
    spdlog::warn("{}: replaced while it was being claimed; filed as failed", what);
    FM_RETURN_IF_ERROR(
        Finish(job.id, false,
               FailedResultJson(job.id, Status(StatusCode::kInvalidJob,
                                               what + ": replaced while it was being claimed"))));
    return ClaimedJob{};
  }
  nlohmann::json owner = {{"version", 1}, {"uid", job.uid}, {"gid", job.gid}};
  Status owned = AtomicWriteFile(dir + "/owner.json", DumpJson(owner) + "\n");
  if (!owned.ok()) {
    // Back where it was (a rename needs no space): a full spool must not leave an active job
    // without its owner, which would fail it when it is resumed.
    if (::rename((dir + "/job.json").c_str(), incoming.path.c_str()) == 0) ::rmdir(dir.c_str());
    return owned;
  }
  return job;
}

Result<std::string> Spool::SetAside(const SpoolEntry& incoming, const nlohmann::json& result) {
  std::string id = UniqueId(incoming.id);
  std::string dir = JobDir(SpoolState::kActive, id);
  FM_RETURN_IF_ERROR(MakeJobDir(dir));
  if (::rename(incoming.path.c_str(), (dir + "/job.json").c_str()) != 0) {
    Status s = Errno("move " + incoming.path + " aside");
    ::rmdir(dir.c_str());
    return s;
  }
  nlohmann::json r = result;
  r["id"] = id;
  FM_RETURN_IF_ERROR(Finish(id, false, r));
  return id;
}

uint32_t Spool::SubmitterOf(const std::string& job_dir) {
  struct stat st {};
  if (::lstat((job_dir + "/job.json").c_str(), &st) != 0) return kNoReader;
  return static_cast<uint32_t>(st.st_uid);
}

Status Spool::Finish(const std::string& id, bool ok, const nlohmann::json& result) {
  std::string from = JobDir(SpoolState::kActive, id);
  FM_RETURN_IF_ERROR(AtomicWriteFile(from + "/result.json", DumpJson(result, 2) + "\n", -1,
                                     SubmitterOf(from)));
  ::unlink((from + "/progress.json").c_str());
  ::unlink((from + "/cancel").c_str());
  return DurableRename(from, JobDir(ok ? SpoolState::kDone : SpoolState::kFailed, id));
}

Result<int> Spool::RaiseStarts(const std::string& id) {
  std::string path = JobDir(SpoolState::kActive, id) + "/starts";
  int n = 0;
  if (FILE* f = std::fopen(path.c_str(), "re")) {
    if (std::fscanf(f, "%d", &n) != 1 || n < 0) n = 0;
    std::fclose(f);
  }
  FM_RETURN_IF_ERROR(AtomicWriteFile(path, std::to_string(n + 1) + "\n"));
  return n + 1;
}

void Spool::LowerStarts(const std::string& id) {
  std::string path = JobDir(SpoolState::kActive, id) + "/starts";
  int n = 0;
  if (FILE* f = std::fopen(path.c_str(), "re")) {
    if (std::fscanf(f, "%d", &n) != 1 || n < 0) n = 0;
    std::fclose(f);
  }
  if (n > 0) (void)AtomicWriteFile(path, std::to_string(n - 1) + "\n");
}

Status Spool::Requeue(const std::string& id) {
  std::string from = JobDir(SpoolState::kFailed, id);
  if (!IsDirectory(from)) return Status(StatusCode::kInvalidJob, "no failed job " + id);
  ::unlink((from + "/starts").c_str());
  FM_RETURN_IF_ERROR(DurableRename(from, JobDir(SpoolState::kActive, id)));
  // Without a result the job is active again; removed last, so a crash before this point leaves
  // an active job with its old result, which the next run replaces.
  ::unlink((JobDir(SpoolState::kActive, id) + "/result.json").c_str());
  return Status::Ok();
}

int Spool::RemoveOldFailedWork(double max_age_s) {
  int removed = 0;
  int64_t now_ns = static_cast<int64_t>(std::time(nullptr)) * 1000000000;
  for (const std::string& id : ListNames(Dir(SpoolState::kFailed))) {
    std::string work = JobDir(SpoolState::kFailed, id) + "/work";
    if (!IsDirectory(work)) continue;
    // result.json is the service's own file: its mtime is when the job was filed (none: long ago).
    struct stat st {};
    const int64_t filed_ns =
        ::lstat((JobDir(SpoolState::kFailed, id) + "/result.json").c_str(), &st) == 0
            ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec
            : 0;
    if (static_cast<double>(now_ns - filed_ns) / 1e9 < max_age_s) continue;
    if (RemoveTree(work).ok()) ++removed;
  }
  return removed;
}

Result<std::string> Spool::PutFile(const std::string& dir, const std::string& content,
                                   std::optional<uint32_t> reader) {
  std::mt19937_64 rng(std::random_device{}());
  auto now = std::chrono::system_clock::now().time_since_epoch();
  for (int attempt = 0; attempt < 16; ++attempt) {
    char name[64];
    std::snprintf(
        name, sizeof(name), "%lld-%06llx.json",
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now).count()),
        static_cast<unsigned long long>(rng() & 0xffffff));
    std::string tmp = Dir("tmp") + "/" + name, to = dir + "/" + name;
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return Errno("create " + tmp);
    // Readable by the service whatever the caller's umask.
    bool written = ::fchmod(fd, reader ? 0600 : 0644) == 0;
    if (written && reader && *reader != ::geteuid() && !GrantReadAcl(fd, *reader).ok()) {
      written = ::fchmod(fd, 0644) == 0;  // no ACLs here: the service must read it
    }
    for (size_t off = 0; written && off < content.size();) {
      ssize_t n = ::write(fd, content.data() + off, content.size() - off);
      if (n < 0 && errno == EINTR) continue;
      written = n > 0;
      if (written) off += static_cast<size_t>(n);
    }
    written = written && ::fsync(fd) == 0;
    Status s = written ? Status::Ok() : Errno("write " + tmp);
    ::close(fd);
    if (s.ok() && ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      if (errno == EEXIST) {
        ::unlink(tmp.c_str());
        continue;
      }
      // A file system without RENAME_NOREPLACE: the random name makes a clash unlikely.
      if ((errno != EINVAL && errno != ENOSYS) || ::rename(tmp.c_str(), to.c_str()) != 0) {
        s = Errno("rename " + tmp + " to " + to);
      }
    }
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    (void)SyncDirectory(dir);  // best effort: the rename is what makes it visible
    return to;
  }
  return Status(StatusCode::kIo, "no free name in " + Dir("tmp"));
}

Result<std::string> Spool::Submit(const nlohmann::json& job) {
  struct stat in {};
  if (::stat(Dir(SpoolState::kIncoming).c_str(), &in) != 0) return Errno("stat incoming/");
  Result<std::string> path = PutFile(Dir(SpoolState::kIncoming), DumpJson(job, 2) + "\n", in.st_uid);
  if (!path.ok()) return path.status();
  std::string name = BaseName(*path);
  return name.substr(0, name.size() - 5);
}

Result<std::string> Spool::PutRequest(const nlohmann::json& request) {
  return PutFile(Dir("requests"), DumpJson(request) + "\n");
}

}  // namespace framemill
