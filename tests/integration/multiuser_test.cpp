// The spool shared by local users: jobs belong to their submitter, outputs go only where the
// submitter could write. Other users are made-up uids run through setpriv (the tests run as
// root; the service runs as root, so every refusal below is framemill's, not the kernel's).
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/posix_acl.h"
#include "harness.h"
#include "service_harness.h"
#include "users_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

std::string Submit(const Service& s, int uid, const std::string& args) {
  RunResult r = Cli(s, "submit " + args, As(uid));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, r.out.find('\n'));
}

// The state folder a job is in now ("" when none).
std::string StateOf(const Service& s, const std::string& id) {
  for (const char* state : {"done", "failed", "active"}) {
    if (fs::exists(s.spool + "/" + state + "/" + id)) return state;
  }
  return fs::exists(s.spool + "/incoming/" + id + ".json") ? "incoming" : "";
}

// A spool as systemd-tmpfiles makes it (systemd/framemill.tmpfiles.conf: no workers/, no
// requests/, nothing the service creates on its first start), a long input, a model, and user
// A's output folder.
struct FreshInstall {
  std::string input, model, out_a;
};
FreshInstall MakeFreshInstall(const Service& s) {
  OwnedDir(s.spool, 0, 0755);
  OwnedDir(s.spool + "/incoming", 0, 01777);
  OwnedDir(s.spool + "/tmp", 0, 01733);
  FreshInstall site;
  site.input = s.dir + "/long.mp4";
  MakeIndexVideo(site.input, 1500, 320, 240, 25, 0);
  site.model = ModelCopy("identity", s.dir);
  site.out_a = OwnedDir(s.dir + "/out-a", kUserA, 0755);
  return site;
}

}  // namespace

TEST_CASE(
    "spool: submit works on a fresh install, another user can neither move nor cancel "
    "a job, its submitter can cancel it") {
  RequireMultiUser();
  Service s = MakeService("spool_users_cancel");
  const FreshInstall site = MakeFreshInstall(s);
  const std::string &input = site.input, &model = site.model, &out_a = site.out_a;
  std::string id =
      Submit(s, kUserA,
             "'" + input + "' --model '" + model + "' --output '" + out_a + "/out.mp4' batch=2");
  const std::string file = s.spool + "/incoming/" + id + ".json";
  struct stat st {};
  REQUIRE(::lstat(file.c_str(), &st) == 0);
  CHECK(st.st_uid == kUserA);
  // Readable by its submitter and the service alone, whatever the umask: nothing for others
  // (0600 with an ACL entry for the spool's owner; the group bits show the ACL's mask).
  CHECK((st.st_mode & 0007) == 0);
  CHECK(ListDir(s.spool + "/tmp").empty());

  // B cannot move, replace or remove A's waiting job (incoming/ is sticky).
  const std::string b = As(kUserB) + " ";
  CHECK(Shell(b + "mv '" + file + "' '" + s.spool + "/incoming/stolen.json'").exit_code != 0);
  CHECK(Shell(b + "rm -f '" + file + "'").exit_code != 0);
  CHECK(Shell(b + "sh -c 'echo {} > " + s.spool + "/tmp/x.json && mv -f " + s.spool +
              "/tmp/x.json " + file + "'")
            .exit_code != 0);
  REQUIRE(::lstat(file.c_str(), &st) == 0);
  CHECK(st.st_uid == kUserA);

  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/active/" + id + "/progress.json"); }, 60));
  nlohmann::json owner = ReadJson(s.spool + "/active/" + id + "/owner.json");
  CHECK(owner["uid"] == kUserA);
  // B's cancel is refused; B cannot write the cancel marker itself either.
  RunResult refused = Cli(s, "cancel " + id, As(kUserB));
  INFO(refused.out << refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(Shell(b + "touch '" + s.spool + "/active/" + id + "/cancel'").exit_code != 0);
  CHECK(StateOf(s, id) == "active");
  CHECK_FALSE(fs::exists(s.spool + "/active/" + id + "/cancel"));
  CHECK(ListDir(s.spool + "/requests").empty());  // read and removed
  // A, who cannot write into active/ either, cancels through a request.
  CHECK(Shell(As(kUserA) + " touch '" + s.spool + "/active/" + id + "/cancel'").exit_code != 0);
  RunResult cancelled = Cli(s, "cancel " + id, As(kUserA));
  INFO(cancelled.out << cancelled.err);
  CHECK(cancelled.exit_code == 0);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/" + id + "/result.json"); }, 60));
  nlohmann::json r = ReadJson(s.spool + "/failed/" + id + "/result.json");
  CHECK(r["reason"]["code"] == "cancelled");
  CHECK(r["submitter"]["uid"] == kUserA);
  CHECK_FALSE(fs::exists(out_a + "/out.mp4"));
  // Retry: B may not; A's cancelled job is not retryable.
  CHECK(Cli(s, "retry " + id, As(kUserB)).exit_code == 1);
  CHECK(Cli(s, "retry " + id, As(kUserA)).exit_code == 1);
  CHECK(StateOf(s, id) == "failed");
  const std::string log = ReadText(s.dir + "/serve.stderr");
  CHECK(CountLines(log, "cancel of job " + id + " by uid 4343: refused") == 1);
  CHECK(CountLines(log, "retry of job " + id + " by uid 4343: refused") == 1);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "spool: the service writes an output only where its submitter could, and overwrites "
    "only what its submitter could replace") {
  RequireMultiUser();
  Service s = MakeService("spool_users_output", {{"defaults",
                                                  {{"workers", 1},
                                                   {"chunk_frames", 16},
                                                   {"device", TestDevice()},
                                                   {"encoder", {{"preset", "ultrafast"}}}}}});
  const std::string video = SmallVideo(s.dir, 32, 64, 48);
  const std::string model = ModelCopy("identity", s.dir);
  const std::string out_a = OwnedDir(s.dir + "/out-a", kUserA, 0755);
  const std::string shared = OwnedDir(s.dir + "/shared", 0, 01777);
  OwnedFile(out_a + "/victim.mp4", kUserA, 0644, "A's file");
  OwnedFile(shared + "/a.mp4", kUserA, 0644, "A's shared file");
  OwnedFile(shared + "/b.mp4.report.html", kUserA, 0644, "A's file named like B's report");
  fs::copy_file(video, out_a + "/private.mp4");  // (copy_file sets the source's mode)
  REQUIRE(::chown((out_a + "/private.mp4").c_str(), kUserA, kUserA) == 0);
  REQUIRE(::chmod((out_a + "/private.mp4").c_str(), 0600) == 0);
  // A's clip that the mode bits let everyone read and an ACL entry denies B (setfacl -m u:B:---),
  // and A's folder that an ACL entry closes to B alone.
  const std::string acl_clip = out_a + "/acl.mp4", acl_dir = OwnedDir(s.dir + "/acl-dir", kUserA,
                                                                      0777);
  fs::copy_file(video, acl_clip);
  REQUIRE(::chown(acl_clip.c_str(), kUserA, kUserA) == 0);
  const std::vector<framemill::AclEntry> deny_b = {{framemill::AclTag::kUserObj, 7},
                                                   {framemill::AclTag::kUser, 0, kUserB},
                                                   {framemill::AclTag::kGroupObj, 7},
                                                   {framemill::AclTag::kMask, 7},
                                                   {framemill::AclTag::kOther, 7}};
  const std::string deny = framemill::EncodeAcl(deny_b);
  if (::setxattr(acl_clip.c_str(), "system.posix_acl_access", deny.data(), deny.size(), 0) != 0 ||
      ::setxattr(acl_dir.c_str(), "system.posix_acl_access", deny.data(), deny.size(), 0) != 0) {
    SkipTest("this file system keeps no POSIX ACLs (" + s.dir + ")");
  }
  REQUIRE(Shell(As(kUserB) + " cat '" + acl_clip + "' >/dev/null").exit_code != 0);
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/requests"); }, 20));
  auto submit = [&](int uid, const std::string& in, const std::string& out, bool overwrite) {
    return Submit(s, uid,
                  "'" + in + "' --model '" + model + "' --output '" + out + "'" +
                      (overwrite ? " overwrite=true" : ""));
  };
  struct Attack {
    std::string id, what;
  };
  std::vector<Attack> attacks = {
      {submit(kUserB, video, out_a + "/new.mp4", false), "B writes into A's directory"},
      {submit(kUserB, video, out_a + "/victim.mp4", true), "B overwrites A's file"},
      {submit(kUserB, video, shared + "/a.mp4", true),
       "B overwrites A's file in a sticky directory"},
      {submit(kUserB, out_a + "/private.mp4", shared + "/b-copy.mp4", false),
       "B reads A's private input"},
      {submit(kUserB, acl_clip, shared + "/b-acl.mp4", false), "B reads an input an ACL denies"},
      {submit(kUserB, video, acl_dir + "/b.mp4", false), "B writes where an ACL denies"},
  };
  const std::string b_ok = submit(kUserB, video, shared + "/b.mp4", false);
  const std::string a_ok = submit(kUserA, video, out_a + "/victim.mp4", true);
  // Users take turns (queue_order.h), so A's job may end before B's: wait for both.
  auto ended = [&](const std::string& id) {
    return StateOf(s, id) == "done" || StateOf(s, id) == "failed";
  };
  REQUIRE(WaitUntil([&] { return ended(a_ok) && ended(b_ok); }, 120));
  for (const Attack& a : attacks) {
    INFO(a.what);
    nlohmann::json r = ReadJson(s.spool + "/failed/" + a.id + "/result.json");
    REQUIRE(r.is_object());
    CHECK(r["reason"]["code"] == "path_not_allowed");
    CHECK(r["reason"]["message"].get<std::string>().find("uid 4343") != std::string::npos);
    CHECK(r["submitter"]["uid"] == kUserB);
  }
  CHECK_FALSE(fs::exists(out_a + "/new.mp4"));
  CHECK(ReadText(shared + "/a.mp4") == "A's shared file");
  CHECK_FALSE(fs::exists(shared + "/b-copy.mp4"));
  CHECK_FALSE(fs::exists(shared + "/b-acl.mp4"));
  CHECK_FALSE(fs::exists(acl_dir + "/b.mp4"));
  // What each could do alone, the service does for them.
  nlohmann::json rb = ReadJson(s.spool + "/done/" + b_ok + "/result.json");
  INFO(rb.dump());
  CHECK(rb["submitter"]["uid"] == kUserB);
  CHECK(CountFrames(shared + "/b.mp4") == 32);
  // B's job report would replace A's file in a sticky directory: not written, and said so.
  CHECK(ReadText(shared + "/b.mp4.report.html") == "A's file named like B's report");
  CHECK_FALSE(rb.contains("report"));
  CHECK(rb["warnings"].dump().find("job report not written") != std::string::npos);
  CHECK(StateOf(s, a_ok) == "done");
  CHECK(CountFrames(out_a + "/victim.mp4") == 32);
  nlohmann::json ra = ReadJson(s.spool + "/done/" + a_ok + "/result.json");
  CHECK(ra["report"] == out_a + "/victim.mp4.report.html");
  CHECK(fs::is_regular_file(out_a + "/victim.mp4.report.html"));
  MESSAGE(attacks.size() << " output and input attacks by another user refused");
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "spool: warm workers serve their submitter's next job of the same model, never another "
    "user's") {
  RequireMultiUser();
  Service s = MakeService("spool_users_warm", {{"defaults",
                                                {{"workers", 1},
                                                 {"chunk_frames", 16},
                                                 {"device", TestDevice()},
                                                 {"encoder", {{"preset", "ultrafast"}}}}}});
  const std::string video = SmallVideo(s.dir, 32, 64, 48);
  const std::string model = ModelCopy("identity", s.dir);
  const std::string out_a = OwnedDir(s.dir + "/out-a", kUserA, 0755);
  const std::string out_b = OwnedDir(s.dir + "/out-b", kUserB, 0755);
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/requests"); }, 20));
  // One job at a time, each waited for: the next one finds the last one's idle workers.
  auto run = [&](int uid, const std::string& out) {
    const std::string id =
        Submit(s, uid, "'" + video + "' --model '" + model + "' --output '" + out + "'");
    REQUIRE(WaitUntil([&] { return StateOf(s, id) == "done" || StateOf(s, id) == "failed"; },
                      120));
    nlohmann::json r = ReadJson(s.spool + "/done/" + id + "/result.json");
    INFO(ReadText(s.dir + "/serve.stderr"));
    REQUIRE(r.is_object());
    CHECK(r["submitter"]["uid"] == uid);
    CHECK(CountFrames(out) == 32);
    return r;
  };
  CHECK(run(kUserA, out_a + "/1.mp4")["workers_warm"] == false);
  // A's second job: the same model and settings, A's own workers, warm (so the next check means
  // something).
  CHECK(run(kUserA, out_a + "/2.mp4")["workers_warm"] == true);
  // B's job: the same model and settings, but A's workers (and the arena with A's frames) are
  // not B's: stopped, and B's job starts its own.
  CHECK(run(kUserB, out_b + "/1.mp4")["workers_warm"] == false);
  CHECK(run(kUserB, out_b + "/2.mp4")["workers_warm"] == true);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "spool: under the unit's UMask=0027 a submitter reads their own progress and result and "
    "cancels with a true answer, and another user reads neither") {
  RequireMultiUser();
  Service s = MakeService("spool_users_umask");
  const FreshInstall site = MakeFreshInstall(s);
  const std::string &input = site.input, &model = site.model, &out_a = site.out_a;
  // The service as the shipped unit runs it (systemd/framemill.service: UMask=0027).
  const mode_t before = ::umask(0027);
  BackgroundJob serve = Serve(s);
  ::umask(before);
  KillOnExit guard{serve};
  std::string id =
      Submit(s, kUserA,
             "'" + input + "' --model '" + model + "' --output '" + out_a + "/out.mp4' batch=2");
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/active/" + id + "/progress.json"); }, 60));
  REQUIRE(WaitUntil([&] { return Cli(s, "status " + id, As(kUserA)).out.find("frames written") !=
                                 std::string::npos; }, 30));
  // B sees that the job exists (list), not what it does.
  CHECK(Cli(s, "status " + id, As(kUserB)).out.find("frames written") == std::string::npos);
  RunResult cancelled = Cli(s, "cancel " + id, As(kUserA));
  INFO(cancelled.out << cancelled.err);
  CHECK(cancelled.exit_code == 0);
  CHECK(cancelled.out.find("cancelled") != std::string::npos);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/" + id + "/result.json"); }, 60));
  struct stat st {};
  REQUIRE(::stat((s.spool + "/failed/" + id + "/result.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0007) == 0);  // the umask holds for everyone else
  RunResult status = Cli(s, "status " + id, As(kUserA));
  INFO(status.out << status.err);
  CHECK(status.out.find("cancelled") != std::string::npos);
  CHECK(Shell(As(kUserA) + " cat '" + s.spool + "/failed/" + id + "/result.json'").exit_code == 0);
  CHECK(Shell(As(kUserB) + " cat '" + s.spool + "/failed/" + id + "/result.json'").exit_code != 0);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "spool: a user's backlog at priority 1000 with back-dated files does not hold another "
    "user's job, the queue's age is not back-dated, queued files are private, and the backlog "
    "past max_queued_per_user is refused") {
  RequireMultiUser();
  Service s = MakeService("spool_fair_queue", {{"max_queued_per_user", 3}});
  const FreshInstall site = MakeFreshInstall(s);
  const std::string out_b = OwnedDir(s.dir + "/out-b", kUserB, 0755);
  const std::string clip = s.dir + "/short.mp4";
  MakeIndexVideo(clip, 24, 160, 128, 25, 0);
  // A floods the queue first: 4 jobs asking priority 1000, their files dated 2001.
  std::vector<std::string> a_jobs;
  for (int i = 0; i < 4; ++i) {
    const std::string id =
        Submit(s, kUserA,
               "'" + clip + "' --model '" + site.model + "' --output '" + site.out_a + "/a" +
                   std::to_string(i) + ".mp4' --priority 1000");
    CHECK(Shell(As(kUserA) + " touch -d '2001-01-01 00:00:00' '" + s.spool + "/incoming/" + id +
                ".json'")
              .exit_code == 0);
    a_jobs.push_back(id);
  }
  const std::string b_job = Submit(s, kUserB,
                                   "'" + clip + "' --model '" + site.model + "' --output '" +
                                       out_b + "/b.mp4'");
  // A's queued job file: A and the service read it, B does not.
  const std::string a_file = s.spool + "/incoming/" + a_jobs[0] + ".json";
  struct stat st {};
  REQUIRE(::stat(a_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0007) == 0);  // nothing for others (the group bits show the ACL's mask)
  CHECK(Shell(As(kUserA) + " cat '" + a_file + "' > /dev/null").exit_code == 0);
  CHECK(Shell(As(kUserB) + " cat '" + a_file + "' > /dev/null 2>&1").exit_code != 0);
  RunResult listed = Cli(s, "list --json");
  REQUIRE(listed.exit_code == 0);
  for (const nlohmann::json& e : nlohmann::json::parse(listed.out)) {
    // `submitted` is when the file came, not the date its owner gave it.
    CHECK(e["submitted"].get<double>() > 1.7e9);
  }

  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  // A's fourth job, the latest of a backlog past max_queued_per_user (3), is refused.
  const std::string refused = a_jobs.back();
  a_jobs.pop_back();
  REQUIRE(WaitUntil(
      [&] {
        for (const std::string& id : a_jobs) {
          if (!fs::exists(s.spool + "/done/" + id + "/result.json")) return false;
        }
        return fs::exists(s.spool + "/done/" + b_job + "/result.json") &&
               fs::exists(s.spool + "/failed/" + refused + "/result.json");
      },
      240));
  const nlohmann::json why = ReadJson(s.spool + "/failed/" + refused + "/result.json");
  INFO(why.dump());
  CHECK(why["reason"]["code"] == "invalid_job");
  CHECK(why["reason"]["message"].get<std::string>().find("max_queued_per_user") !=
        std::string::npos);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
  // The order the jobs started in: one of A's, then B's (A's 1000 counts as 0, and users take
  // turns), then the rest of A's.
  const std::string log = ReadText(s.dir + "/serve.stderr");
  std::vector<std::string> started;
  const std::string mark = "info: job ";
  for (size_t at = log.find(mark); at != std::string::npos; at = log.find(mark, at + 1)) {
    const size_t id_at = at + mark.size(), end = log.find(' ', id_at);
    if (log.compare(end, 9, " for uid ") == 0) started.push_back(log.substr(id_at, end - id_at));
  }
  INFO(log);
  REQUIRE(started.size() == 4);
  CHECK(started[1] == b_job);
  CHECK(std::count(started.begin(), started.end(), b_job) == 1);
}

// `framemill run --submitter` (what the service passes its Slurm parts and stitch) makes no check
// on names: whatever a name led to when it was opened, each file meets the submitter's rights on
// the descriptor. So a name that a swap made point at another user's file is refused here.
TEST_CASE(
    "spool: every file a job names is checked for its submitter on the file as opened: input, "
    "model, card, face table, output directory, output replaced") {
  RequireMultiUser();
  const std::string dir = ScratchDir("opened_rights");
  const std::string a = OwnedDir(dir + "/a", kUserA, 0755);        // A's folder, open to read
  const std::string b = OwnedDir(dir + "/b", kUserB, 0755);        // B's own
  const std::string shared = OwnedDir(dir + "/shared", 0, 01777);  // sticky, as /tmp
  const std::string video = b + "/clip.mp4";
  MakeIndexVideo(video, 24, 64, 48, 25, 0);
  const std::string model = ModelCopy("identity", b);
  fs::copy_file(video, a + "/private.mp4");
  REQUIRE(::chmod((a + "/private.mp4").c_str(), 0600) == 0);
  REQUIRE(::chown((a + "/private.mp4").c_str(), kUserA, kUserA) == 0);
  fs::copy_file(model, a + "/private.pt");
  REQUIRE(::chmod((a + "/private.pt").c_str(), 0600) == 0);
  REQUIRE(::chown((a + "/private.pt").c_str(), kUserA, kUserA) == 0);
  OwnedFile(a + "/card.json", kUserA, 0600, "{\"card_version\": 1}");
  OwnedFile(a + "/faces.json", kUserA, 0600, "{}");
  OwnedFile(shared + "/a.mp4", kUserA, 0644, "A's shared file");
  // B's names, each pointing where a swapped link would: at A's private files.
  REQUIRE(::symlink((a + "/private.mp4").c_str(), (b + "/link.mp4").c_str()) == 0);
  fs::create_directories(b + "/m");
  const std::string b_model = ModelCopy("identity", b + "/m");
  REQUIRE(::symlink((a + "/card.json").c_str(), (b_model + ".json").c_str()) == 0);
  // The clip again with an ACL entry that denies B (mode bits let everyone read it).
  const std::string acl_clip = a + "/acl.mp4";
  fs::copy_file(video, acl_clip);
  if (!DenyReadTo(acl_clip, kUserB)) {
    SkipTest("this file system keeps no POSIX ACLs (" + dir + ")");
  }
  const nlohmann::json config = {{"worker_binary", FRAMEMILL_WORKER_BIN}};
  std::ofstream(dir + "/config.json") << config.dump();
  const nlohmann::json base = {{"input", video},
                               {"model", model},
                               {"output", b + "/o.mp4"},
                               {"workers", 1},
                               {"chunk_frames", 8},
                               {"device", TestDevice()},
                               {"encoder", {{"preset", "ultrafast"}}}};
  auto run = [&](const std::string& name, nlohmann::json keys) {
    nlohmann::json job = base;
    job.update(keys);
    std::ofstream(dir + "/" + name + ".json") << job.dump(2);
    return WaitJob(
        StartFramemill(dir,
                       {"--config", dir + "/config.json", "run", dir + "/" + name + ".json",
                        "--submitter", "4343:4343", "--json"},
                       {}, name),
        300);
  };
  struct Attack {
    std::string name, what;
    nlohmann::json keys;
  };
  const std::vector<Attack> attacks = {
      {"input", "input", {{"input", b + "/link.mp4"}}},
      {"acl", "input", {{"input", acl_clip}}},
      {"model", "model", {{"model", a + "/private.pt"}}},
      {"card", "the model card", {{"model", b_model}}},
      {"table", "face_table", {{"mode", "faces"}, {"face_table", a + "/faces.json"}}},
      {"outdir", "output", {{"output", a + "/o.mp4"}}},
      {"replace", "output", {{"output", shared + "/a.mp4"}, {"overwrite", true}}},
  };
  for (const Attack& attack : attacks) {
    INFO(attack.name);
    RunResult r = run(attack.name, attack.keys);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    nlohmann::json result = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE(result.is_object());
    CHECK(result["reason"]["code"] == "path_not_allowed");
    const std::string message = result["reason"]["message"].get<std::string>();
    CHECK(message.find(attack.what + ": the submitter, uid 4343") != std::string::npos);
    CHECK(message.find("card_version") == std::string::npos);  // nothing of A's bytes
  }
  CHECK(ReadText(shared + "/a.mp4") == "A's shared file");
  CHECK_FALSE(fs::exists(a + "/o.mp4"));
  CHECK_FALSE(fs::exists(b + "/o.mp4"));
  // B's own files: the job runs. And the refusals were framemill's: without --submitter, the
  // clip whose ACL denies B alone is read (by root, whose confined ffprobe is no more than any
  // other user to A's 0600 files).
  RunResult own = run("own", nlohmann::json::object());
  CHECK_MESSAGE(own.exit_code == 0, own.err);
  CHECK(CountFrames(b + "/o.mp4") == 24);
  std::ofstream(dir + "/root.json") << [&] {
    nlohmann::json job = base;
    job["input"] = acl_clip;
    job["output"] = b + "/root.mp4";
    return job.dump();
  }();
  RunResult root =
      WaitJob(StartFramemill(dir, {"--config", dir + "/config.json", "run", dir + "/root.json"}, {},
                             "root"),
              300);
  CHECK_MESSAGE(root.exit_code == 0, root.err);
}
