#include "bench/night_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace framemill::night {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string EnterPrivateMounts() {
  if (::geteuid() != 0) return "framemill-night needs root (mount namespace, tmpfs, made-up uids)";
  if (::unshare(CLONE_NEWNS) != 0)
    return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("making / rprivate: ") + std::strerror(errno);
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return std::string("PR_SET_CHILD_SUBREAPER: ") + std::strerror(errno);
  }
  return "";
}

std::string MountTmpfs(const std::string& path, int mib, mode_t mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  char opts[64];
  std::snprintf(opts, sizeof(opts), "size=%dm,mode=%o", mib, static_cast<unsigned>(mode));
  if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
    return "mount tmpfs on " + path + ": " + std::strerror(errno);
  }
  return "";
}

Filler Fill(const std::string& dir) {
  Filler f;
  f.path = dir + "/.night-filler";
  int fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return f;  // the filesystem may be full already: nothing to take
  static const std::vector<char> block(1 << 20, 'x');
  size_t chunk = block.size();
  while (chunk >= 4096) {
    ssize_t n = ::write(fd, block.data(), chunk);
    if (n > 0) {
      f.bytes += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    chunk /= 2;  // ENOSPC: take the last pages in smaller writes
  }
  ::close(fd);
  return f;
}

void Free(Filler* f) {
  if (!f->path.empty()) ::unlink(f->path.c_str());
  f->path.clear();
  f->bytes = 0;
}

namespace {

bool ReadProc(pid_t pid, Proc* p) {
  const std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 4 > stat.size()) return false;
  p->pid = pid;
  p->state = stat[paren + 2];
  p->ppid = std::atoi(stat.c_str() + paren + 4);
  std::string cmd = ReadText("/proc/" + std::to_string(pid) + "/cmdline");
  p->argv.clear();
  std::string arg;
  for (char c : cmd) {
    if (c == '\0') {
      p->argv.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  if (!arg.empty()) p->argv.push_back(arg);
  return true;
}

bool Has(const Proc& p, const std::string& word) {
  for (const std::string& a : p.argv) {
    if (a == word) return true;
  }
  return false;
}

}  // namespace

std::vector<Proc> Descendants(pid_t root) {
  std::map<pid_t, Proc> all;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return {};
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    Proc p;
    if (ReadProc(std::atoi(e->d_name), &p)) all[p.pid] = p;
  }
  ::closedir(d);
  std::vector<Proc> out;
  for (const auto& [pid, p] : all) {
    pid_t up = p.ppid;
    for (int depth = 0; up > 1 && depth < 64; ++depth) {
      if (up == root) {
        out.push_back(p);
        break;
      }
      auto it = all.find(up);
      if (it == all.end()) break;
      up = it->second.ppid;
    }
  }
  return out;
}

ProcKind KindOf(const Proc& p) {
  if (p.argv.empty()) return ProcKind::kOther;
  const std::string exe = fs::path(p.argv[0]).filename().string();
  if (exe == "framemill-worker") return ProcKind::kWorker;
  if (exe != "ffmpeg") return ProcKind::kOther;
  // supervisor/media: the joins read a concat list; an encoder reads raw frames from its stdin
  // and writes a NUT segment; the decoder writes raw frames to its stdout.
  if (Has(p, "concat")) return ProcKind::kMux;
  if (Has(p, "pipe:0") && Has(p, "nut")) return ProcKind::kEncoder;
  if (Has(p, "pipe:1") && Has(p, "rawvideo")) return ProcKind::kDecoder;
  return ProcKind::kOtherFfmpeg;
}

const char* Name(ProcKind k) {
  switch (k) {
    case ProcKind::kWorker:
      return "worker";
    case ProcKind::kDecoder:
      return "decoder";
    case ProcKind::kEncoder:
      return "encoder";
    case ProcKind::kMux:
      return "mux";
    case ProcKind::kOtherFfmpeg:
      return "ffmpeg";
    case ProcKind::kOther:
      return "other";
  }
  return "?";
}

namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out, bool append,
            const std::string& err) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  const int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), flags, 0644);
  if (err.empty()) {
    posix_spawn_file_actions_adddup2(&files, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawnp(&pid, raw[0], &files, nullptr, raw.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&files);
  return pid;
}

}  // namespace

pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  return Spawn(argv, log, true, "");
}

int RunCapture(const std::vector<std::string>& argv, const std::string& scratch, std::string* out,
               std::string* err) {
  std::string out_tmpl = scratch + "/run-out-XXXXXX", err_tmpl = scratch + "/run-err-XXXXXX";
  ::close(::mkstemp(out_tmpl.data()));
  ::close(::mkstemp(err_tmpl.data()));
  pid_t pid = Spawn(argv, out_tmpl, false, err != nullptr ? err_tmpl : "");
  int status = 0;
  int code = -1;
  if (pid > 0) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (out != nullptr) *out = ReadText(out_tmpl);
  if (err != nullptr) *err = ReadText(err_tmpl);
  ::unlink(out_tmpl.c_str());
  ::unlink(err_tmpl.c_str());
  return code;
}

std::vector<std::string> ListTree(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    out.push_back(fs::relative(it->path(), dir).string());
  }
  return out;
}

}  // namespace framemill::night
