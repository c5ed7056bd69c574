#include "supervisor/process/program_answers.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

namespace framemill {
namespace {

constexpr char kHeader[] = "framemill program answer 1\n";
constexpr char kEndOfQuestion = '\x1e';  // between the question and the answer in the file
constexpr size_t kMaxAnswerBytes = 4u << 20;

// A directory or file only this user may change.
bool OnlyMine(const struct stat& st) {
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool UsableDir(const std::string& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && OnlyMine(st);
}

// `dir`, made (0700) when missing, if it is usable.
bool MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return false;
  return UsableDir(dir);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The question: the program's identity and its arguments. "" when it cannot be named (the
// program is not found, or an argument has a line break).
std::string Question(const std::vector<std::string>& argv) {
  const std::string exe = FindExecutable(argv.at(0));
  struct stat st {};
  if (exe.empty() || ::stat(exe.c_str(), &st) != 0) return "";
  std::string q = exe + "\n" + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
                  std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                  std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) +
                  "." + std::to_string(st.st_ctim.tv_nsec) + "\n";
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].find('\n') != std::string::npos || argv[i].find(kEndOfQuestion) != std::string::npos)
      return "";
    q += argv[i] + "\n";
  }
  return q;
}

// The file name of a question: FNV-1a of it (the question itself is in the file and compared).
std::string FileName(const std::string& question) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : question) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char name[40];
  std::snprintf(name, sizeof name, "answer-%016llx", static_cast<unsigned long long>(h));
  return name;
}

bool ReadKept(const std::string& path, const std::string& question, std::string* answer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && OnlyMine(st) &&
            static_cast<size_t>(st.st_size) <= kMaxAnswerBytes &&
            std::time(nullptr) - st.st_mtime < kProgramAnswerMaxAgeS;
  if (ok) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ok = got == text.size();
  }
  ::close(fd);
  const std::string expected = kHeader + question + kEndOfQuestion;
  if (!ok || text.compare(0, expected.size(), expected) != 0) return false;
  *answer = text.substr(expected.size());
  return true;
}

void Keep(const std::string& dir, const std::string& question, const std::string& answer) {
  if (answer.size() > kMaxAnswerBytes / 2) return;
  std::string temp = dir + "/.answer-XXXXXX";
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return;
  const std::string text = kHeader + question + kEndOfQuestion + answer;
  size_t put = 0;
  while (put < text.size()) {
    const ssize_t n = ::write(fd, text.data() + put, text.size() - put);
    if (n <= 0) break;
    put += static_cast<size_t>(n);
  }
  const bool written = ::close(fd) == 0 && put == text.size();
  if (!written || ::rename(temp.c_str(), (dir + "/" + FileName(question)).c_str()) != 0) {
    spdlog::debug("cannot keep a program's answer in {}: {}", dir, std::strerror(errno));
    ::unlink(temp.c_str());
  }
}

}  // namespace

std::string ProgramAnswersDir() {
  const std::string systemd = Env("CACHE_DIRECTORY");
  if (!systemd.empty()) return systemd.substr(0, systemd.find(':'));  // the first, if several
  const std::string xdg = Env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/framemill";
  const std::string home = Env("HOME");
  if (!home.empty() && home[0] == '/') return home + "/.cache/framemill";
  return "";
}

Result<CommandOutput> AskProgram(const std::vector<std::string>& argv) {
  const std::string question = Question(argv);
  std::string dir = question.empty() ? "" : ProgramAnswersDir();
  if (!dir.empty()) {
    // Made (0700) when missing, with its parent ($XDG_CACHE_HOME or ~/.cache); believed only
    // when it is this user's and no one else may write it.
    (void)::mkdir(dir.substr(0, dir.rfind('/')).c_str(), 0700);
    if (!MakeDir(dir)) dir.clear();
  }
  std::string kept;
  if (!dir.empty() && ReadKept(dir + "/" + FileName(question), question, &kept)) {
    CommandOutput out;
    out.exit_code = 0;
    out.out = std::move(kept);
    return out;
  }
  Result<CommandOutput> r = RunAndCapture(argv);
  if (r.ok() && r->exit_code == 0 && !dir.empty()) Keep(dir, question, r->out);
  return r;
}

}  // namespace framemill
