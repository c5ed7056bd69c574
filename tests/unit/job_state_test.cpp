#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "supervisor/job/job_state.h"

namespace fs = std::filesystem;
using framemill::JobState;

namespace {

std::string FreshDir(const std::string& name) {
  std::string dir = fs::temp_directory_path().string() + "/framemill-unit-" + name + "-" +
                    std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void WriteSegment(const JobState& st, int64_t index, const std::string& content) {
  std::ofstream(st.SegmentPath(index)) << content;
}

nlohmann::json ReadState(const std::string& dir) {
  std::ifstream in(dir + "/state.json");
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("job state: segments finished out of order are recorded from the first on") {
  const std::string dir = FreshDir("state_order");
  framemill::JobSpec job;
  job.input = "/in.mp4";
  job.model = "/m.pt";
  auto plan = framemill::MakePlan(400, 25, 4);  // 16 chunks, 4 segments
  REQUIRE(plan.ok());
  JobState st(dir, job, *plan, 4);
  REQUIRE(st.Load().ok());
  CHECK(st.resumed() == 0);
  WriteSegment(st, 1, "one");
  REQUIRE(st.Finished(1, 3).ok());
  CHECK(st.done() == 1);
  CHECK(ReadState(dir)["segments_done"].empty());  // segment 0 is not finished yet
  WriteSegment(st, 0, "zero");
  REQUIRE(st.Finished(0, 4).ok());
  nlohmann::json done = ReadState(dir)["segments_done"];
  REQUIRE(done.size() == 2);
  CHECK(done[0]["index"] == 0);
  CHECK(done[1]["index"] == 1);
  CHECK(done[1]["bytes"] == 3);

  // A later run of the same plan keeps both; one whose file changed size stops the prefix there.
  JobState again(dir, job, *plan, 4);
  REQUIRE(again.Load().ok());
  CHECK(again.resumed() == 2);
  CHECK_FALSE(again.all_done());
  WriteSegment(st, 0, "zero, longer now");
  JobState changed(dir, job, *plan, 4);
  REQUIRE(changed.Load().ok());
  CHECK(changed.resumed() == 0);
  fs::remove_all(dir);
}

TEST_CASE("job state: a state made for another plan, or unreadable, starts the job over") {
  const std::string dir = FreshDir("state_other");
  framemill::JobSpec job;
  job.input = "/in.mp4";
  job.model = "/m.pt";
  auto plan = framemill::MakePlan(400, 25, 4);
  REQUIRE(plan.ok());
  {
    JobState st(dir, job, *plan, 4);
    REQUIRE(st.Load().ok());
    WriteSegment(st, 0, "zero");
    REQUIRE(st.Finished(0, 4).ok());
  }
  auto other = framemill::MakePlan(400, 25, 2);  // the same video in shorter segments
  REQUIRE(other.ok());
  JobState st2(dir, job, *other, 2);
  REQUIRE(st2.Load().ok());
  CHECK(st2.resumed() == 0);
  std::ofstream(dir + "/state.json") << "{ not json";
  JobState st3(dir, job, *plan, 4);
  REQUIRE(st3.Load().ok());
  CHECK(st3.resumed() == 0);
  CHECK(ReadState(dir)["segments_done"].empty());  // rewritten, valid again
  fs::remove_all(dir);
}

TEST_CASE("job state: a state whose fields have other types starts the job over, never throws") {
  const std::string dir = FreshDir("state_types");
  framemill::JobSpec job;
  job.input = "/in.mp4";
  job.model = "/m.pt";
  auto plan = framemill::MakePlan(400, 25, 4);
  REQUIRE(plan.ok());
  nlohmann::json good;
  {
    JobState st(dir, job, *plan, 4);
    REQUIRE(st.Load().ok());
    WriteSegment(st, 0, "zero");
    REQUIRE(st.Finished(0, 4).ok());
    good = ReadState(dir);
  }
  // Each field in turn of another type (a state written by another version, or damaged): the
  // job starts over, or keeps what still reads, and Load() never throws.
  const std::vector<std::pair<nlohmann::json::json_pointer, nlohmann::json>> damage = {
      {"/version"_json_pointer, "1"},
      {"/input"_json_pointer, 7},
      {"/frame_count"_json_pointer, -1.5},
      {"/chunk_frames"_json_pointer, nullptr},
      {"/segments_done"_json_pointer, 3},
      {"/segments_done/0"_json_pointer, "zero"},
      {"/segments_done/0/index"_json_pointer, "0"},
      {"/segments_done/0/bytes"_json_pointer, nlohmann::json::array()},
  };
  for (const auto& [where, value] : damage) {
    INFO(where.to_string());
    nlohmann::json st = good;
    st[where] = value;
    std::ofstream(dir + "/state.json") << st.dump();
    JobState again(dir, job, *plan, 4);
    framemill::Status loaded = framemill::Status::Ok();
    CHECK_NOTHROW(loaded = again.Load());
    CHECK(loaded.ok());
    CHECK(again.resumed() == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("job state: an identity that changed in any key starts the job over") {
  const std::string dir = FreshDir("state_identity");
  framemill::JobSpec job;
  job.input = "/in.mp4";
  job.model = "/m.pt";
  auto plan = framemill::MakePlan(400, 25, 4);  // 16 chunks, 4 segments
  REQUIRE(plan.ok());
  const nlohmann::json identity = {{"input", {{"size", 10}}}, {"model", {{"size", 20}}},
                                   {"settings", "crf 18"}};
  {
    JobState st(dir, job, *plan, 4);
    st.SetIdentity(identity);
    REQUIRE(st.Load().ok());
    WriteSegment(st, 0, "zero");
    REQUIRE(st.Finished(0, 4).ok());
  }
  CHECK(ReadState(dir)["identity"] == identity);
  {  // The same identity keeps the segment.
    JobState st(dir, job, *plan, 4);
    st.SetIdentity(identity);
    REQUIRE(st.Load(/*write_back=*/false).ok());
    CHECK(st.resumed() == 1);
  }
  for (const char* key : {"input", "model", "settings"}) {
    nlohmann::json other = identity;
    other[key] = "changed";
    JobState st(dir, job, *plan, 4);
    st.SetIdentity(other);
    REQUIRE(st.Load(/*write_back=*/false).ok());
    INFO(key);
    CHECK(st.resumed() == 0);
  }
  {  // A state saved without an identity (an older run) is not trusted either.
    nlohmann::json st = ReadState(dir);
    st.erase("identity");
    std::ofstream(dir + "/state.json") << st.dump();
    JobState again(dir, job, *plan, 4);
    again.SetIdentity(identity);
    REQUIRE(again.Load(/*write_back=*/false).ok());
    CHECK(again.resumed() == 0);
  }
}
