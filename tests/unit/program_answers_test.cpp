// AskProgram: a program's answer about itself is kept on disk, and asked again when the
// program, the question or the answer's file says it must be.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "supervisor/process/program_answers.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

// Sets (or, with nullopt, unsets) an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A scratch directory with a program that counts its runs in runs.txt and prints its arguments.
struct Scratch {
  std::string dir, program, answers;
  explicit Scratch(int exit_code = 0) {
    char tmpl[] = "/tmp/framemill-answers-XXXXXX";
    dir = ::mkdtemp(tmpl);
    program = dir + "/tool";
    Write(exit_code, "");
    answers = dir + "/cache";
    ::mkdir(answers.c_str(), 0700);
  }
  ~Scratch() { fs::remove_all(dir); }
  void Write(int exit_code, const std::string& extra) const {
    std::ofstream(program) << "#!/bin/sh\necho x >> '" << dir << "/runs.txt'\necho \"says $*\"\n"
                           << extra << "exit " << exit_code << "\n";
    ::chmod(program.c_str(), 0755);
  }
  int Runs() const {
    std::ifstream in(dir + "/runs.txt");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  std::string OnlyAnswerFile() const {
    std::string found;
    for (const auto& e : fs::directory_iterator(answers)) found = e.path().string();
    return found;
  }
};

std::string Ask(const Scratch& s, const std::string& arg) {
  Result<CommandOutput> r = AskProgram({s.program, arg});
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  return r->out;
}

}  // namespace

TEST_CASE("program answers: asked once, then read back, and another question asked anew") {
  Scratch s;
  ScopedEnv env("CACHE_DIRECTORY", s.answers);
  CHECK(ProgramAnswersDir() == s.answers);
  CHECK(Ask(s, "-demuxers") == "says -demuxers\n");
  CHECK(Ask(s, "-demuxers") == "says -demuxers\n");
  CHECK(s.Runs() == 1);
  CHECK(Ask(s, "-devices") == "says -devices\n");
  CHECK(s.Runs() == 2);
  CHECK(std::distance(fs::directory_iterator(s.answers), {}) == 2);  // one file a question
}

TEST_CASE("program answers: a changed program is asked again") {
  Scratch s;
  ScopedEnv env("CACHE_DIRECTORY", s.answers);
  CHECK(Ask(s, "-h") == "says -h\n");
  s.Write(0, "echo more\n");  // a new build: other size, times
  CHECK(Ask(s, "-h") == "says -h\nmore\n");
  CHECK(s.Runs() == 2);
}

TEST_CASE("program answers: a failed run is not kept") {
  Scratch s(3);
  ScopedEnv env("CACHE_DIRECTORY", s.answers);
  for (int i = 0; i < 2; ++i) {
    Result<CommandOutput> r = AskProgram({s.program, "-x"});
    REQUIRE(r.ok());
    CHECK(r->exit_code == 3);
  }
  CHECK(s.Runs() == 2);
  CHECK(fs::is_empty(s.answers));
}

TEST_CASE("program answers: a file others may write, an old one or a changed one is not believed") {
  Scratch s;
  ScopedEnv env("CACHE_DIRECTORY", s.answers);
  CHECK(Ask(s, "-q") == "says -q\n");
  const std::string file = s.OnlyAnswerFile();
  REQUIRE(!file.empty());
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  ::chmod(file.c_str(), 0666);  // anyone could have written it
  CHECK(Ask(s, "-q") == "says -q\n");
  CHECK(s.Runs() == 2);
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // replaced by a file of its own

  // Another answer planted under the same name: its question is not this one.
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream all;
    all << in.rdbuf();
    text = all.str();
  }
  std::string planted = text;
  planted.replace(planted.find("-q"), 2, "-z");
  std::ofstream(file, std::ios::trunc) << planted;
  CHECK(Ask(s, "-q") == "says -q\n");
  CHECK(s.Runs() == 3);

  // A day old: asked again.
  const struct timespec old[2] = {{std::time(nullptr) - kProgramAnswerMaxAgeS - 60, 0},
                                  {std::time(nullptr) - kProgramAnswerMaxAgeS - 60, 0}};
  REQUIRE(::utimensat(AT_FDCWD, file.c_str(), old, 0) == 0);
  CHECK(Ask(s, "-q") == "says -q\n");
  CHECK(s.Runs() == 4);
  CHECK(Ask(s, "-q") == "says -q\n");
  CHECK(s.Runs() == 4);
}

TEST_CASE("program answers: a directory others may write, or none at all, keeps nothing") {
  Scratch s;
  ::chmod(s.answers.c_str(), 0777);
  {
    ScopedEnv env("CACHE_DIRECTORY", s.answers);
    CHECK(Ask(s, "-a") == "says -a\n");
    CHECK(Ask(s, "-a") == "says -a\n");
    CHECK(s.Runs() == 2);
    CHECK(fs::is_empty(s.answers));
  }
  ScopedEnv no_systemd("CACHE_DIRECTORY", std::nullopt);
  ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv no_home("HOME", std::nullopt);
  CHECK(ProgramAnswersDir().empty());
  CHECK(Ask(s, "-a") == "says -a\n");
  CHECK(s.Runs() == 3);
}

TEST_CASE("program answers: $XDG_CACHE_HOME/framemill and ~/.cache/framemill are made 0700") {
  Scratch s;
  ScopedEnv no_systemd("CACHE_DIRECTORY", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", s.dir + "/xdg");
    CHECK(ProgramAnswersDir() == s.dir + "/xdg/framemill");
    CHECK(Ask(s, "-b") == "says -b\n");
    CHECK(Ask(s, "-b") == "says -b\n");
    CHECK(s.Runs() == 1);
    struct stat st {};
    REQUIRE(::stat((s.dir + "/xdg/framemill").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", s.dir + "/home");
  ::mkdir((s.dir + "/home").c_str(), 0755);
  CHECK(ProgramAnswersDir() == s.dir + "/home/.cache/framemill");
  CHECK(Ask(s, "-b") == "says -b\n");  // another directory: asked there once
  CHECK(s.Runs() == 2);
  CHECK(fs::is_directory(s.dir + "/home/.cache/framemill"));
}
