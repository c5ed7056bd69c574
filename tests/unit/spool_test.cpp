#include <doctest/doctest.h>

#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "supervisor/spool/spool.h"
#include "supervisor/spool/spool_requests.h"

using framemill::Spool;
using framemill::SpoolEntry;
using framemill::StatusCode;

namespace {

std::string TempSpool() {
  char dir[] = "/tmp/framemill-unit-spool-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void Age(const std::string& path, double days) {
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = std::time(nullptr) - static_cast<time_t>(days * 86400);
  times[0].tv_nsec = times[1].tv_nsec = 0;
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("spool: Prepare makes incoming/ 1777 and tmp/, requests/ 1733, whatever the umask") {
  std::string root = TempSpool();
  mode_t old = ::umask(077);
  Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  ::umask(old);
  CHECK(ModeOf(root + "/incoming") == 01777);
  CHECK(ModeOf(root + "/tmp") == 01733);
  CHECK(ModeOf(root + "/requests") == 01733);
  CHECK(ModeOf(root + "/active") == 0755);
  (void)framemill::RemoveTree(root);
}

TEST_CASE(
    "spool: a FIFO is refused by Claim without blocking, and a job file is claimed with its "
    "owner") {
  std::string root = TempSpool();
  Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  REQUIRE(::mkfifo((root + "/incoming/f.json").c_str(), 0644) == 0);
  REQUIRE(spool.Submit({{"input", "/a"}}).ok());
  std::vector<SpoolEntry> in = spool.Incoming();
  REQUIRE(in.size() == 2);
  int claimed = 0, refused = 0;
  for (const SpoolEntry& e : in) {
    auto c = spool.Claim(e);
    if (e.id == "f") {
      REQUIRE_FALSE(c.ok());
      CHECK(c.status().code() == StatusCode::kInvalidJob);
      CHECK(c.status().message() == "incoming/f.json: a FIFO");
      ++refused;
    } else {
      REQUIRE(c.ok());
      CHECK(c->uid == ::geteuid());
      CHECK(framemill::PathExists(root + "/active/" + c->id + "/owner.json"));
      ++claimed;
    }
  }
  CHECK(claimed == 1);
  CHECK(refused == 1);
  (void)framemill::RemoveTree(root);
}

TEST_CASE("spool: the start count rises before each start and an orderly stop lowers it") {
  std::string root = TempSpool();
  Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  REQUIRE(::mkdir((root + "/active/j").c_str(), 0755) == 0);
  CHECK(*spool.RaiseStarts("j") == 1);
  CHECK(*spool.RaiseStarts("j") == 2);
  spool.LowerStarts("j");
  CHECK(*spool.RaiseStarts("j") == 2);
  (void)framemill::RemoveTree(root);
}

TEST_CASE("spool: kept work of failed jobs is removed once older than the limit") {
  std::string root = TempSpool();
  Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  for (const char* id : {"old", "new"}) {
    std::string dir = root + "/failed/" + id;
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    REQUIRE(::mkdir((dir + "/work").c_str(), 0755) == 0);
    REQUIRE(framemill::AtomicWriteFile(dir + "/result.json", "{}\n").ok());
  }
  Age(root + "/failed/old/result.json", 8);
  Age(root + "/failed/new/result.json", 6);
  CHECK(spool.RemoveOldFailedWork(7 * 86400.0) == 1);
  CHECK_FALSE(framemill::PathExists(root + "/failed/old/work"));
  CHECK(framemill::PathExists(root + "/failed/new/work"));
  CHECK(framemill::PathExists(root + "/failed/old/result.json"));
  (void)framemill::RemoveTree(root);
}

TEST_CASE("spool: only failures that a retry may mend are retryable") {
  for (const char* code : {"crashed", "no_space", "worker_failed", "encode_failed", "io"}) {
    CHECK(framemill::RetryableReason(code));
  }
  for (const char* code : {"invalid_job", "input_invalid", "path_not_allowed", "cancelled", ""}) {
    CHECK_FALSE(framemill::RetryableReason(code));
  }
}

TEST_CASE("spool: each state is its folder's name, and a job carries the state it was found in") {
  CHECK(std::string(framemill::Name(framemill::SpoolState::kIncoming)) == "incoming");
  CHECK(std::string(framemill::Name(framemill::SpoolState::kActive)) == "active");
  CHECK(std::string(framemill::Name(framemill::SpoolState::kDone)) == "done");
  CHECK(std::string(framemill::Name(framemill::SpoolState::kFailed)) == "failed");
  std::string root = TempSpool();
  Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  for (framemill::SpoolState state : framemill::kSpoolStates) {
    CHECK(framemill::IsDirectory(root + "/" + framemill::Name(state)));
    CHECK(spool.JobDir(state, "x") == root + "/" + framemill::Name(state) + "/x");
  }
  auto state_of = [&](const std::string& id) {
    auto e = spool.Find(id);
    REQUIRE(e.ok());
    return e->state;
  };
  auto a = spool.Submit({{"input", "/a"}});
  auto b = spool.Submit({{"input", "/b"}});
  REQUIRE((a.ok() && b.ok()));
  CHECK(state_of(*a) == framemill::SpoolState::kIncoming);
  for (const SpoolEntry& e : spool.Incoming()) REQUIRE(spool.Claim(e).ok());
  CHECK(state_of(*a) == framemill::SpoolState::kActive);
  REQUIRE(spool.Finish(*a, true, {{"status", "done"}}).ok());
  REQUIRE(spool.Finish(*b, false, {{"status", "failed"}}).ok());
  CHECK(state_of(*a) == framemill::SpoolState::kDone);
  CHECK(state_of(*b) == framemill::SpoolState::kFailed);
  CHECK(framemill::Ended(framemill::SpoolState::kDone));
  CHECK(framemill::Ended(framemill::SpoolState::kFailed));
  CHECK_FALSE(framemill::Ended(framemill::SpoolState::kActive));
  CHECK_FALSE(framemill::Ended(framemill::SpoolState::kIncoming));
  (void)framemill::RemoveTree(root);
}

TEST_CASE("spool: a request's action is parsed once: cancel, retry, nothing else") {
  CHECK(*framemill::ParseRequestAction("cancel") == framemill::RequestAction::kCancel);
  CHECK(*framemill::ParseRequestAction("retry") == framemill::RequestAction::kRetry);
  CHECK(std::string(framemill::Name(framemill::RequestAction::kRetry)) == "retry");
  auto bad = framemill::ParseRequestAction("Cancel");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "request.action: must be cancel or retry");
}
