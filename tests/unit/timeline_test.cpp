// The memory timeline's JSON lines: each event kind is written by its Name(), and the records
// kept in memory for the report carry the kind itself.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/workers/timeline.h"

using namespace framemill;

TEST_CASE("timeline events are written by name and kept as kinds") {
  const std::vector<std::pair<TimelineEventKind, std::string>> kinds = {
      {TimelineEventKind::kStart, "start"}, {TimelineEventKind::kReady, "ready"},
      {TimelineEventKind::kChunk, "chunk"}, {TimelineEventKind::kRecycle, "recycle"},
      {TimelineEventKind::kStop, "stop"},   {TimelineEventKind::kExit, "exit"},
      {TimelineEventKind::kCrash, "crash"}, {TimelineEventKind::kKill, "kill"}};
  char dir[] = "/tmp/framemill-unit-timeline-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/job.timeline.jsonl";
  {
    Timeline t;
    REQUIRE(t.Open(path, 1000).ok());
    for (size_t i = 0; i < kinds.size(); ++i) {
      TimelineEvent e;
      e.worker = 1;
      e.kind = kinds[i].first;
      e.reason = i == 3 ? "rss 900 MiB over the soft limit 800 MiB" : "";
      t.Record(e, 1000 + 500 * i);
    }
    REQUIRE(t.records().size() == kinds.size());
    for (size_t i = 0; i < kinds.size(); ++i) CHECK(t.records()[i].event.kind == kinds[i].first);
  }
  std::ifstream in(path);
  std::string line;
  size_t i = 0;
  for (; std::getline(in, line); ++i) {
    REQUIRE(i < kinds.size());
    nlohmann::json j = nlohmann::json::parse(line);
    CHECK(std::string(Name(kinds[i].first)) == kinds[i].second);
    CHECK(j["event"] == kinds[i].second);
    CHECK(j["t"].get<double>() == doctest::Approx(0.5 * static_cast<double>(i)));
    CHECK(j.contains("reason") == (i == 3));
  }
  CHECK(i == kinds.size());
  std::filesystem::remove_all(dir);
}
