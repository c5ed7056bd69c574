// framemill serve over a set of GPUs (config service_gpus): several jobs at once, each on GPUs of
// its own; a lone job over all of them; priorities holding while the head waits for its GPUs;
// warm workers kept per GPU and model. There is no GPU here: the test hook
// FRAMEMILL_TEST_GPU_LABELS makes the GPUs labels (scheduled as GPUs, workers on the CPU), so
// what is proven is the queue; the GPU machine proves the pinning (scripts/gpu/run-case.py servicegpus).
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

const Env kLabels = {{"FRAMEMILL_TEST_GPU_LABELS", "1"}};

nlohmann::json JobFile(const Service& s, const std::string& id, const std::string& input,
                       const std::string& model, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json j = {{"input", input},
                      {"output", s.dir + "/out/" + id + ".mp4"},
                      {"model", model},
                      {"workers", 1}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

bool Filed(const Service& s, const std::string& id) {
  return fs::exists(s.spool + "/done/" + id + "/result.json") ||
         fs::exists(s.spool + "/failed/" + id + "/result.json");
}

nlohmann::json Result(const Service& s, const std::string& id) {
  nlohmann::json r = ReadJson(s.spool + "/done/" + id + "/result.json");
  return r.is_null() ? ReadJson(s.spool + "/failed/" + id + "/result.json") : r;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
bool Ended(int pid) {
  const std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0;
}

// Where `needle` first appears in the service's log; npos when it does not.
size_t At(const std::string& log, const std::string& needle) { return log.find(needle); }

}  // namespace

TEST_CASE("service gpus: queued jobs run at once on GPUs of their own, a lone one takes all") {
  Service s = MakeService("svc_gpus_share", {{"service_gpus", {0, 1}}});
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 48);
  fs::create_directories(s.dir + "/out");
  // Queued before the service starts: it finds two jobs and two free GPUs.
  Drop(s, "a", JobFile(s, "a", input, model).dump());
  Drop(s, "b", JobFile(s, "b", input, model).dump());
  BackgroundJob serve = Serve(s, kLabels);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return Filed(s, "a") && Filed(s, "b"); }, 90));
  // A job's result is filed a moment before the service takes its GPUs back: dropped in that
  // moment, the next job gets the GPUs free then. Wait until both are free (the metrics said
  // none or one free while a and b ran).
  REQUIRE(WaitUntil(
      [&] {
        return ReadAll(s.spool + "/metrics/framemill.prom")
                   .find("framemill_service_gpus{state=\"free\"} 2\n") != std::string::npos;
      },
      10));
  // Alone in the queue now: every GPU.
  Drop(s, "lone", JobFile(s, "lone", input, model).dump());
  REQUIRE(WaitUntil([&] { return Filed(s, "lone"); }, 60));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  const std::string log = ReadAll(s.dir + "/serve.stderr");
  INFO(log);
  const nlohmann::json a = Result(s, "a"), b = Result(s, "b"), lone = Result(s, "lone");
  INFO(a.dump() << "\n" << b.dump() << "\n" << lone.dump());
  for (const nlohmann::json* r : {&a, &b, &lone}) {
    CHECK((*r)["status"] == "done");
    CHECK((*r)["frames"] == 48);
  }
  for (const std::string id : {"a", "b", "lone"}) {
    CHECK(CountFrames(s.dir + "/out/" + id + ".mp4") == 48);
  }
  // Each job's workers logged into the folder of its GPU set.
  CHECK(fs::exists(s.spool + "/workers/gpus-0/worker-0-1.log"));
  CHECK(fs::exists(s.spool + "/workers/gpus-1/worker-0-1.log"));
  // One GPU each, not the same one, and both started before either ended.
  CHECK(a["service_gpus"].size() == 1);
  CHECK(b["service_gpus"].size() == 1);
  CHECK(a["service_gpus"] != b["service_gpus"]);
  const size_t first_done = std::min(At(log, "job a done"), At(log, "job b done"));
  CHECK(At(log, "job a on GPUs") < first_done);
  CHECK(At(log, "job b on GPUs") < first_done);
  CHECK(lone["service_gpus"] == nlohmann::json({0, 1}));
  CHECK(At(log, "job lone on GPUs [0, 1]") != std::string::npos);
  // workers 1 over two GPUs: one on each, both started (the pools of a and b were on one GPU).
  CHECK(lone["workers_warm"] == false);
  CHECK(lone["workers_started"] == 2);
}

TEST_CASE("service gpus: the head waits for the GPUs it names and nothing behind it starts") {
  Service s = MakeService("svc_gpus_order", {{"service_gpus", {0, 1}}});
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 96);
  fs::create_directories(s.dir + "/out");
  // first (a share of three jobs: one GPU), then second needing both, then third.
  Drop(s, "first", JobFile(s, "first", input, model, {{"priority", 2}}).dump());
  Drop(s, "second",
       JobFile(s, "second", input, model, {{"priority", 1}, {"device", "auto"}, {"gpus", {0, 1}}})
           .dump());
  Drop(s, "third", JobFile(s, "third", input, model, {{"priority", 0}}).dump());
  // A GPU the service does not own: refused with the reason, the service goes on.
  Drop(s, "foreign",
       JobFile(s, "foreign", input, model, {{"priority", -1}, {"device", "auto"}, {"gpus", {7}}})
           .dump());
  BackgroundJob serve = Serve(s, kLabels);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil(
      [&] {
        return Filed(s, "first") && Filed(s, "second") && Filed(s, "third") && Filed(s, "foreign");
      },
      120));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  const std::string log = ReadAll(s.dir + "/serve.stderr");
  INFO(log);
  CHECK(Result(s, "first")["service_gpus"] == nlohmann::json({0}));
  CHECK(Result(s, "second")["service_gpus"] == nlohmann::json({0, 1}));
  CHECK(Result(s, "second")["status"] == "done");
  // second waited for GPU 0 while GPU 1 was free, and third did not take GPU 1 meanwhile.
  CHECK(At(log, "job second waits for GPUs [0, 1] (free: [1])") != std::string::npos);
  CHECK(At(log, "job second on GPUs [0, 1]") < At(log, "job third on GPUs"));
  CHECK(At(log, "job first done") < At(log, "job second on GPUs"));
  CHECK(Result(s, "third")["status"] == "done");
  const nlohmann::json foreign = Result(s, "foreign");
  CHECK(foreign["status"] == "failed");
  CHECK(foreign["reason"]["code"] == "invalid_job");
  CHECK(foreign["reason"]["message"].get<std::string>().find(
            "GPU 7 is not one of the service's GPUs [0, 1]") != std::string::npos);
}

TEST_CASE("service gpus: warm workers are kept per GPU set and model") {
  Service s = MakeService("svc_gpus_warm", {{"service_gpus", {0, 1}}});
  const std::string identity = ModelCopy("identity", s.dir);
  const std::string invert = ModelCopy("invert", s.dir);
  const std::string input = SmallVideo(s.dir, 24);
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve = Serve(s, kLabels);
  KillOnExit guard_serve{serve};
  auto run = [&](const std::string& id, const std::string& model, int gpu) {
    Drop(s, id, JobFile(s, id, input, model, {{"device", "auto"}, {"gpus", {gpu}}}).dump());
    REQUIRE(WaitUntil([&] { return Filed(s, id); }, 60));
    nlohmann::json r = Result(s, id);
    INFO(id << ": " << r.dump());
    REQUIRE(r["status"] == "done");
    CHECK(r["service_gpus"] == nlohmann::json({gpu}));
    return r;
  };
  CHECK(run("identity_on_0", identity, 0)["workers_warm"] == false);
  CHECK(run("invert_on_1", invert, 1)["workers_warm"] == false);
  // Each model's workers waited on their own GPU: both are found again.
  CHECK(run("identity_again_on_0", identity, 0)["workers_warm"] == true);
  CHECK(run("invert_again_on_1", invert, 1)["workers_warm"] == true);
  // identity on GPU 1, where invert's workers idle: those are stopped, identity's started.
  CHECK(run("identity_on_1", identity, 1)["workers_warm"] == false);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

TEST_CASE("service gpus: SIGTERM with two jobs running keeps both, and the restart finishes both") {
  Service s = MakeService("svc_gpus_sigterm", {{"service_gpus", {0, 1}}});
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = s.dir + "/long.mp4";
  MakeIndexVideo(input, 900, 160, 128, 25, 0);
  fs::create_directories(s.dir + "/out");
  for (const std::string id : {"one", "two"}) {
    Drop(s, id, JobFile(s, id, input, model, {{"segment_seconds", 4}, {"batch", 2}}).dump());
  }
  BackgroundJob first = Serve(s, kLabels);
  KillOnExit guard_first{first};
  auto segments = [&](const std::string& id) {
    nlohmann::json st = ReadJson(s.spool + "/active/" + id + "/work/state.json");
    return st.is_object() ? st.value("segments_done", nlohmann::json::array()).size() : 0;
  };
  // Both running at once, each with a segment done.
  REQUIRE(WaitUntil([&] { return segments("one") >= 1 && segments("two") >= 1; }, 120));
  // Each one's progress (framemill list, status) says which GPU it holds.
  const nlohmann::json p1 = ReadJson(s.spool + "/active/one/progress.json");
  const nlohmann::json p2 = ReadJson(s.spool + "/active/two/progress.json");
  INFO(p1.dump() << "\n" << p2.dump());
  CHECK(p1["service_gpus"].size() == 1);
  CHECK(p2["service_gpus"].size() == 1);
  CHECK(p1["service_gpus"] != p2["service_gpus"]);
  // The metrics count both GPUs busy (rewritten every 2 s while jobs run).
  CHECK(WaitUntil(
      [&] {
        const std::string m = ReadAll(s.spool + "/metrics/framemill.prom");
        return m.find("framemill_service_gpus{state=\"busy\"} 2\n") != std::string::npos &&
               m.find("framemill_service_gpus{state=\"free\"} 0\n") != std::string::npos;
      },
      10));
  ::kill(first.pid, SIGTERM);
  RunResult stopped = WaitJob(first, 30);
  INFO(stopped.err);
  CHECK(stopped.exit_code == 0);
  CHECK(WorkerPids(s.dir).empty());
  for (const std::string id : {"one", "two"}) {
    CHECK(fs::exists(s.spool + "/active/" + id + "/job.json"));
    CHECK(ReadAll(s.spool + "/active/" + id + "/starts") == "0\n");  // an orderly stop, no crash
  }
  BackgroundJob second = Serve(s, kLabels, "serve2");
  KillOnExit guard_second{second};
  REQUIRE(WaitUntil([&] { return Filed(s, "one") && Filed(s, "two"); }, 180));
  for (const std::string id : {"one", "two"}) {
    nlohmann::json r = Result(s, id);
    INFO(id << ": " << r.dump());
    CHECK(r["status"] == "done");
    CHECK(r["segments_resumed"].get<int>() >= 1);
    CHECK(OutOfPlace(FrameIndices(s.dir + "/out/" + id + ".mp4", 160, 128), 900) == 0);
  }
  ::kill(second.pid, SIGTERM);
  CHECK(WaitJob(second, 60).exit_code == 0);
}

TEST_CASE("service gpus: a job waiting for its GPUs is cancelled at once, the running one goes on") {
  Service s = MakeService("svc_gpus_cancel", {{"service_gpus", {0}}});
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = s.dir + "/long.mp4";
  MakeIndexVideo(input, 900, 160, 128, 25, 0);
  fs::create_directories(s.dir + "/out");
  Drop(s, "busy", JobFile(s, "busy", input, model, {{"batch", 2}}).dump());
  BackgroundJob serve = Serve(s, kLabels);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/active/busy/progress.json"); }, 60));
  Drop(s, "waiting",
       JobFile(s, "waiting", input, model, {{"device", "auto"}, {"gpus", {0}}}).dump());
  REQUIRE(WaitUntil(
      [&] {
        return ReadAll(s.dir + "/serve.stderr").find("job waiting waits for GPUs [0]") !=
               std::string::npos;
      },
      30));
  // The operator sees why it waits.
  CHECK(ReadJson(s.spool + "/active/waiting/progress.json")["waiting_for_gpus"] ==
        nlohmann::json({0}));
  RunResult list = Cli(s, "list");
  INFO(list.out);
  CHECK(list.out.find("waiting for GPUs [0]") != std::string::npos);
  RunResult cancel = Cli(s, "cancel waiting");
  INFO(cancel.err);
  CHECK(cancel.exit_code == 0);
  REQUIRE(WaitUntil([&] { return Filed(s, "waiting"); }, 30));
  CHECK_FALSE(Filed(s, "busy"));  // the running job did not have to end first
  const nlohmann::json waiting = Result(s, "waiting");
  CHECK(waiting["reason"]["code"] == "cancelled");
  REQUIRE(WaitUntil([&] { return Filed(s, "busy"); }, 120));
  CHECK(Result(s, "busy")["status"] == "done");
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  CHECK(ReadAll(s.dir + "/serve.stderr").find("job waiting left the queue while it waited") !=
        std::string::npos);
}

TEST_CASE("service gpus: a job that kills the supervisor is charged alone, not the job beside it") {
  Service s = MakeService("svc_gpus_crash", {{"service_gpus", {0, 1}}});
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = s.dir + "/long.mp4";
  MakeIndexVideo(input, 600, 160, 128, 25, 0);
  fs::create_directories(s.dir + "/out");
  Drop(s, "doomed", JobFile(s, "doomed", input, model).dump());
  Drop(s, "bystander", JobFile(s, "bystander", input, model, {{"batch", 2}}).dump());
  Env env = kLabels;
  env.push_back({"FRAMEMILL_FAULT_SUPERVISOR_ABORT", "doomed"});
  std::string logs;
  for (int start = 0; start < 8 && !(Filed(s, "doomed") && Filed(s, "bystander")); ++start) {
    const std::string name = "serve" + std::to_string(start);
    BackgroundJob serve = Serve(s, env, name);
    KillOnExit guard{serve};
    REQUIRE(WaitUntil(
        [&] { return Ended(serve.pid) || (Filed(s, "doomed") && Filed(s, "bystander")); }, 90));
    if (!Ended(serve.pid)) ::kill(serve.pid, SIGTERM);
    WaitJob(serve, 30);
    logs += ReadAll(s.dir + "/" + name + ".stderr");
  }
  INFO(logs);
  REQUIRE(Filed(s, "doomed"));
  REQUIRE(Filed(s, "bystander"));
  CHECK(Result(s, "doomed")["reason"]["code"] == "crashed");
  const nlohmann::json bystander = Result(s, "bystander");
  CHECK(bystander["status"] == "done");
  // Started beside doomed once (that crash counts), then alone and to the end.
  CHECK(bystander["starts"] == 2);
  CHECK(CountFrames(s.dir + "/out/bystander.mp4") == 600);
  CHECK(logs.find("resumes alone") != std::string::npos);
  CHECK(bystander["service_gpus"] == nlohmann::json({0, 1}));  // alone, on every GPU
}
