// The operator's command line (CLI11), the on_job_end hook and journal-aware log lines, driven
// through the real framemill binary.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "service_harness.h"

namespace fs = std::filesystem;
using namespace framemill::test;

namespace {

RunResult Bare(const std::string& args) {
  return Shell("'" + std::string(FRAMEMILL_BIN) + "' " + args);
}

}  // namespace

TEST_CASE("cli: --help on every command is usage on stdout with exit 0, bad usage is exit 2") {
  RunResult top = Bare("--help");
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("Subcommands:") != std::string::npos);
  for (const char* cmd : {"run", "serve", "submit", "list", "status", "cancel", "retry", "model",
                          "model export", "model list", "model import", "model info", "completion",
                          "version", "stitch", "slurm", "slurm submit", "slurm status"}) {
    RunResult r = Bare(std::string(cmd) + " --help");
    INFO(cmd << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage: framemill " + std::string(cmd)) != std::string::npos);
  }
  RunResult version = Bare("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("framemill ", 0) == 0);
  // Unknown options and missing arguments are errors that name them, never taken as files.
  RunResult bogus = Bare("list --bogus");
  CHECK(bogus.exit_code == 2);
  CHECK(bogus.err.find("--bogus") != std::string::npos);
  RunResult missing = Bare("submit in.mp4 --model m.pt");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--output") != std::string::npos);
  CHECK(Bare("").exit_code == 2);
  CHECK(Bare("frobnicate").exit_code == 2);
}

TEST_CASE("cli: a mistyped command names itself and the command meant, exit 2") {
  struct Typo {
    const char* args;
    const char* named;  // the word as typed
    const char* meant;  // the suggestion, "" for none
  };
  for (const Typo& t : {Typo{"sumbit in.mp4 --model m.pt --output o.mp4", "'sumbit'", "'submit'"},
                        Typo{"stauts", "'stauts'", "'status'"},
                        Typo{"--config /nonexistent.json stauts", "'stauts'", "'status'"},
                        Typo{"model exprot identity /tmp/x.pt", "'exprot'", "'model export'"},
                        Typo{"slurm stauts job.json", "'stauts'", "'slurm status'"},
                        Typo{"frobnicate", "'frobnicate'", ""}}) {
    RunResult r = Bare(t.args);
    INFO(t.args << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(t.named) != std::string::npos);
    if (*t.meant != '\0') {
      CHECK(r.err.find(std::string("did you mean ") + t.meant) != std::string::npos);
    } else {
      CHECK(r.err.find("Commands: run") != std::string::npos);  // the list, when none is near
    }
  }
  // A command's own arguments are no commands: `run` takes a file whatever its name.
  RunResult run = Bare("run stauts.json");
  CHECK(run.err.find("did you mean") == std::string::npos);
}

TEST_CASE("cli: a missing spool is an error naming where it looked") {
  Service s = MakeService("cli_no_spool", {{"spool_dir", ScratchDir("cli_no_spool_x") + "/none"}});
  for (const char* cmd : {"list", "status", "list --json"}) {
    RunResult r = Cli(s, cmd);
    INFO(cmd << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("/none") != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("cli: generated bash completion offers each command's options") {
  RunResult script = Bare("completion bash");
  REQUIRE(script.exit_code == 0);
  const std::string dir = ScratchDir("cli_completion");
  std::ofstream(dir + "/c.bash") << script.out;
  RunResult r = Shell("bash -c 'source " + dir +
                      "/c.bash; COMP_WORDS=(framemill submit --); COMP_CWORD=2; _framemill; "
                      "echo \"${COMPREPLY[*]}\"; COMP_WORDS=(framemill model \"\"); COMP_CWORD=2; "
                      "_framemill; echo \"${COMPREPLY[*]}\"; COMP_WORDS=(framemill li); "
                      "COMP_CWORD=1; _framemill; echo \"${COMPREPLY[*]}\"'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("--model") != std::string::npos);
  CHECK(r.out.find("--output") != std::string::npos);
  CHECK(r.out.find("export list") != std::string::npos);
  CHECK(r.out.find("\nlist\n") != std::string::npos);
}

TEST_CASE("service: --json, the on_job_end hook once per job, and journal priorities") {
  const std::string bin = ScratchDir("op_hook_bin");
  const std::string calls = bin + "/calls.txt";
  const std::string hook = bin + "/hook.sh";
  std::ofstream(hook) << "#!/bin/sh\necho \"$FRAMEMILL_JOB_ID $FRAMEMILL_JOB_STATE $1\" >> '"
                      << calls << "'\n";
  fs::permissions(hook, fs::perms::owner_all);
  Service s = MakeService("op_hook", {{"on_job_end", {hook}}, {"on_job_end_timeout_s", 10}});
  const std::string input = SmallVideo(s.dir, 24);
  const std::string model = ModelCopy("identity", s.dir);
  fs::create_directories(s.dir + "/out");
  // stderr as the "journal": JOURNAL_STREAM names the device and inode of the log file.
  const std::string log = s.dir + "/serve.stderr";
  std::ofstream(log).close();
  struct stat st {};
  REQUIRE(::stat(log.c_str(), &st) == 0);
  BackgroundJob serve =
      Serve(s, {{"JOURNAL_STREAM", std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)}});
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/incoming"); }, 30));

  RunResult sub = Cli(s, "submit '" + input + "' --model '" + model + "' --output '" + s.dir +
                             "/out/a.mp4' --json");
  REQUIRE(sub.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(sub.out);
  const std::string id = j.at("id");
  CHECK(j.at("state") == "incoming");
  Drop(s, "bad", "{not json");
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/" + id + "/result.json"); }, 90));
  // Hooks run on their own thread, after the filing: wait for both.
  REQUIRE(WaitUntil(
      [&] {
        const std::string t = ReadText(calls);
        return CountLines(t, " failed ") >= 1 && CountLines(t, " done ") >= 1;
      },
      30));

  nlohmann::json list = nlohmann::json::parse(Cli(s, "list --json").out);
  REQUIRE(list.is_array());
  bool found = false;
  for (const nlohmann::json& e : list) {
    if (e.at("id") == id) {
      found = true;
      CHECK(e.at("state") == "done");
      CHECK(e.at("output") == s.dir + "/out/a.mp4");
    }
  }
  CHECK(found);
  nlohmann::json status = nlohmann::json::parse(Cli(s, "status " + id + " --json").out);
  CHECK(status.at("result").at("status") == "done");
  CHECK(status.at("result").at("report") == s.dir + "/out/a.mp4.report.html");
  CHECK(fs::is_regular_file(s.dir + "/out/a.mp4.report.html"));
  nlohmann::json counts = nlohmann::json::parse(Cli(s, "status --json").out);
  CHECK(counts.at("counts").at("done") == 1);

  // One call per ended job, with its state and its result.json.
  const std::string text = ReadText(calls);
  INFO(text);
  CHECK(CountLines(text, id + " done " + s.spool + "/done/" + id + "/result.json") == 1);
  CHECK(CountLines(text, " failed " + s.spool + "/failed/") == 1);

  ::kill(serve.pid, SIGTERM);
  WaitJob(serve, 60);
  // Journal lines: a priority prefix, no timestamp of their own.
  const std::string lines = ReadText(log);
  CHECK(CountLines(lines, "<6>framemill[") >= 1);
  CHECK(CountLines(lines, "<4>framemill[") >= 1);  // the bad job set aside is a warning
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) CHECK_MESSAGE(line[0] == '<', line);
  }
}

TEST_CASE("service: a job cancelled while waiting runs the hook, ids by prefix, a brief status") {
  const std::string bin = ScratchDir("op_cancel_bin");
  const std::string calls = bin + "/calls.txt";
  const std::string hook = bin + "/hook.sh";
  std::ofstream(hook) << "#!/bin/sh\necho \"$FRAMEMILL_JOB_ID $FRAMEMILL_JOB_STATE\" >> '"
                      << calls << "'\n";
  fs::permissions(hook, fs::perms::owner_all);
  Service s = MakeService("op_cancel", {{"on_job_end", {hook}}, {"on_job_end_timeout_s", 10}});
  const std::string model = ModelCopy("identity", s.dir);
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/incoming"); }, 30));
  auto submit = [&](const std::string& input, const std::string& out) {
    RunResult r = Cli(s, "submit '" + input + "' --model '" + model + "' --output '" + s.dir +
                             "/out/" + out + "' batch=1 --json");
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out).at("id").get<std::string>();
  };
  // A short job first, to have one done.
  const std::string short_id = submit(SmallVideo(s.dir, 24), "short.mp4");
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/" + short_id); }, 90));
  // The done job's status: a few lines, not the document; by a unique start of its id.
  RunResult brief = Cli(s, "status " + short_id.substr(0, short_id.size() - 2));
  INFO(brief.out << brief.err);
  CHECK(brief.exit_code == 0);
  CHECK(brief.out.rfind(short_id + ": done: " + s.dir + "/out/short.mp4\n", 0) == 0);
  CHECK(brief.out.find("24 frames in 0:00:") != std::string::npos);
  CHECK(std::count(brief.out.begin(), brief.out.end(), '\n') <= 6);

  // One job runs (one at a time), the next waits; cancelling the waiting one files it at once
  // and runs the hook, as any job's end does.
  const std::string long_input = s.dir + "/long.mp4";
  MakeIndexVideo(long_input, 3000, 160, 128, 25, 0);
  const std::string running = submit(long_input, "long.mp4");
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/active/" + running); }, 60));
  const std::string waiting = submit(long_input, "waiting.mp4");
  RunResult cancel = Cli(s, "cancel " + waiting);
  INFO(cancel.out << cancel.err);
  CHECK(cancel.exit_code == 0);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/" + waiting); }, 30));
  CHECK(WaitUntil([&] { return CountLines(ReadText(calls), waiting + " failed") == 1; }, 30));
  RunResult shown = Cli(s, "status " + waiting);
  CHECK(shown.out.find(waiting + ": cancelled: ") != std::string::npos);
  // Retrying it names the real reason.
  RunResult retry = Cli(s, "retry " + waiting);
  CHECK(retry.exit_code == 1);
  CHECK(retry.err.find("was cancelled; it is not retried") != std::string::npos);

  // An ambiguous start is refused, naming the jobs; list has a header and filters by state.
  RunResult both = Cli(s, "status " + short_id.substr(0, 1));
  if (running.rfind(short_id.substr(0, 1), 0) == 0) {
    CHECK(both.exit_code == 3);
    CHECK(both.err.find("give more of the id") != std::string::npos);
  }
  RunResult list = Cli(s, "list --state done");
  CHECK(list.out.rfind("ID\tSTATE\tDETAIL\n", 0) == 0);
  CHECK(list.out.find(short_id + "\tdone") != std::string::npos);
  CHECK(list.out.find(waiting) == std::string::npos);
  CHECK(Cli(s, "list --state nosuch").exit_code == 2);
  // Cancelled is a state of its own on the screen (filed under failed/ with reason cancelled).
  RunResult cancelled = Cli(s, "list --state cancelled");
  CHECK(cancelled.out.find(waiting + "\tcancelled\tcancelled") != std::string::npos);
  CHECK(cancelled.out.find(short_id) == std::string::npos);
  CHECK(Cli(s, "list --state failed").out.find(waiting) == std::string::npos);

  // Cancelled, or ended by itself meanwhile on a fast machine: the hook runs once either way.
  Cli(s, "cancel " + running);
  CHECK(WaitUntil([&] { return CountLines(ReadText(calls), running + " ") == 1; }, 120));
  ::kill(serve.pid, SIGTERM);
  WaitJob(serve, 60);
}

// FRAMEMILL_MEDIA_NICE (a diagnosis knob, common/env_knobs.h): the job's decoding, encoding and
// joining ffmpeg run that much nicer than framemill, so that a GPU worker's kernel launches win
// the cores those fill. A stand-in ffmpeg records the niceness each run of it has; unset, every
// run has framemill's own.
TEST_CASE("diagnosis: FRAMEMILL_MEDIA_NICE runs the job's decoder, encoders and join nicer") {
  const std::string dir = ScratchDir("media_nice");
  const std::string input = dir + "/in.mp4";
  MakeIndexVideo(input, 120, 160, 128, 25, /*tone_hz=*/440);
  std::string ffmpeg = Shell("command -v ffmpeg").out;
  while (!ffmpeg.empty() && ffmpeg.back() == '\n') ffmpeg.pop_back();
  REQUIRE_FALSE(ffmpeg.empty());
  const std::string stand_in = dir + "/ffmpeg", runs = dir + "/runs.txt";
  {
    std::ofstream f(stand_in);
    f << "#!/bin/sh\n"
      << "echo \"$(cut -d' ' -f19 /proc/self/stat)\" >> '" << runs << "'\n"
      << "exec '" << ffmpeg << "' \"$@\"\n";
  }
  fs::permissions(stand_in, fs::perms::owner_all);
  // Unconfined: the stand-in writes its record beside the job.
  const nlohmann::json config = {{"ffmpeg", stand_in}, {"worker_sandbox", "off"}};
  nlohmann::json job = {{"input", input},
                        {"model", ModelCopy("identity", dir)},
                        {"device", TestDevice()},
                        {"encoders", 2},
                        {"chunk_frames", 20}};
  const int mine = ::getpriority(PRIO_PROCESS, 0);
  auto niceness = [&](const Env& env, const std::string& name) {
    fs::remove(runs);
    job["output"] = dir + "/" + name + ".mp4";
    RunResult r = RunJob(dir, job, config, env);
    INFO(name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    std::map<int, int> seen;  // niceness -> runs of ffmpeg
    std::ifstream in(runs);
    for (int n; in >> n;) ++seen[n];
    return seen;
  };
  // The decoder, two or more encoders and the live join; the stand-in is every ffmpeg of the job.
  const std::map<int, int> unset = niceness({}, "unset");
  REQUIRE(unset.size() == 1);
  CHECK(unset.begin()->first == mine);
  CHECK(unset.begin()->second >= 4);
  const std::map<int, int> nicer = niceness({{"FRAMEMILL_MEDIA_NICE", "7"}}, "nicer");
  // (A run framemill makes to ask ffmpeg about itself, where no answer was kept, is not the job's
  // media program: it keeps framemill's niceness.)
  const int want = std::min(19, mine + 7);
  REQUIRE(nicer.count(want) == 1);
  CHECK(nicer.at(want) >= 4);
}
