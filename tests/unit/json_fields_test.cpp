#include <doctest/doctest.h>

#include <cstdio>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/job_file.h"
#include "common/json_fields.h"

using framemill::DumpJson;
using framemill::kMaxJsonDepth;
using framemill::ParseJsonText;
using framemill::StatusCode;
using framemill::ValueOr;
using nlohmann::json;

namespace {

std::string Nested(int depth, char open, char close) {
  return std::string(static_cast<size_t>(depth), open) +
         std::string(static_cast<size_t>(depth), close);
}

}  // namespace

TEST_CASE("JSON nested deeper than the limit is refused, without recursion, at 200,000 levels") {
  CHECK(ParseJsonText(Nested(kMaxJsonDepth, '[', ']'), "t", StatusCode::kInvalidJob).ok());
  auto over = ParseJsonText(Nested(kMaxJsonDepth + 1, '[', ']'), "t", StatusCode::kInvalidJob);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().code() == StatusCode::kInvalidJob);
  CHECK(over.status().message().find("nested deeper than 64") != std::string::npos);
  // 200,000 levels: a parsed copy or dump of that would overflow the stack.
  std::string deep = "{\"input\": \"/a.mp4\", \"x\": " + Nested(200000, '[', ']') + "}";
  auto r = ParseJsonText(deep, "t", StatusCode::kInvalidJob);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("nested deeper") != std::string::npos);
  std::string objects;
  for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
  CHECK_FALSE(
      ParseJsonText(objects + "1" + std::string(200000, '}'), "t", StatusCode::kInvalidJob).ok());
}

TEST_CASE("the depth pre-scan skips brackets inside strings and escaped quotes") {
  std::string text = "{\"a\": \"[[[[{{{{\\\"[[[[\", \"b\": [[1]]}";
  CHECK(framemill::JsonNestingDepth(text, 100) == 3);
  CHECK(framemill::JsonNestingDepth("\"\\\\\" [[]]", 100) == 2);         // an escaped backslash
  CHECK(framemill::JsonNestingDepth(std::string(1000, '['), 10) == 11);  // stops counting early
  std::string many_in_string = "{\"a\": \"" + std::string(100000, '[') + "\"}";
  CHECK(ParseJsonText(many_in_string, "t", StatusCode::kInvalidJob).ok());
}

TEST_CASE("duplicate keys and bytes that are not UTF-8 are refused as errors, never thrown") {
  auto dup =
      ParseJsonText("{\"input\": \"/a\", \"input\": \"/b\"}", "job.json", StatusCode::kInvalidJob);
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.status().message().find("\"input\" appears twice") != std::string::npos);
  // The same key in two objects is fine.
  CHECK(ParseJsonText("{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}}", "t", StatusCode::kInvalidJob).ok());
  auto bad = ParseJsonText("{\"input\": \"\xff\xfe\"}", "job.json", StatusCode::kInvalidJob);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidJob);
  CHECK_FALSE(ParseJsonText(std::string("\0{}", 3), "t", StatusCode::kInvalidJob).ok());
}

TEST_CASE("DumpJson replaces bytes that are not UTF-8 where dump() throws") {
  json j = {{"path", std::string("/in/\xff\xfe-\xc3\x28.mp4")}, {"ok", "caf\xc3\xa9"}};
  CHECK_THROWS_AS(j.dump(), json::type_error);
  std::string text;
  CHECK_NOTHROW(text = DumpJson(j));
  json back = json::parse(text);  // valid UTF-8 again
  CHECK(back["path"] == "/in/\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbd(.mp4");
  CHECK(back["ok"] == "caf\xc3\xa9");  // valid text is kept as it is
  CHECK(DumpJson(j, 2).find("\n  \"ok\"") != std::string::npos);
}

TEST_CASE("a job path with a NUL byte is refused") {
  auto r = framemill::ParseJob(
      json::parse("{\"input\": \"/in/a.mp4\\u0000/etc/passwd\", \"output\": \"/o.mp4\", "
                  "\"model\": \"/m.pt\"}"),
      framemill::JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "job.input: contains a NUL byte");
}

TEST_CASE("ReadJsonFile refuses a FIFO without blocking, a symlink, and an oversized file") {
  char dir[] = "/tmp/framemill-json-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  std::string d = dir;
  REQUIRE(::mkfifo((d + "/fifo.json").c_str(), 0600) == 0);
  auto fifo = framemill::ReadJsonFile(d + "/fifo.json", 1 << 20, StatusCode::kInvalidJob);
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.status().message().find("not a regular file") != std::string::npos);
  FILE* f = std::fopen((d + "/job.json").c_str(), "w");
  std::fputs("{\"a\": 1}", f);
  std::fclose(f);
  REQUIRE(::symlink((d + "/job.json").c_str(), (d + "/link.json").c_str()) == 0);
  auto link = framemill::ReadJsonFile(d + "/link.json", 1 << 20, StatusCode::kInvalidJob);
  REQUIRE_FALSE(link.ok());
  CHECK(link.status().message().find("symbolic link") != std::string::npos);
  CHECK(framemill::ReadJsonFile(d + "/link.json", 1 << 20, StatusCode::kInvalidJob,
                                framemill::LinkPolicy::kFollow)
            .ok());
  auto big = framemill::ReadJsonFile(d + "/job.json", 4, StatusCode::kInvalidJob);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().find("more than the limit of 4") != std::string::npos);
  for (const char* name : {"/fifo.json", "/job.json", "/link.json"}) ::unlink((d + name).c_str());
  ::rmdir(dir);
}

TEST_CASE("ValueOr gives a field of the asked kind and range, else the fallback, never throwing") {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"s": "text", "n": 7, "neg": -3, "big": 5000000000, "f": 2.5, "list": [1], "obj": {}})");
  CHECK(ValueOr<std::string>(j, "s", "") == "text");
  CHECK(ValueOr<std::string>(j, "n", "none") == "none");
  CHECK(ValueOr<std::string>(j, "list", "none") == "none");
  CHECK(ValueOr(j, "n", 0) == 7);
  CHECK(ValueOr(j, "neg", 0) == -3);
  CHECK(ValueOr(j, "neg", 0u) == 0u);  // negative for an unsigned: the fallback
  CHECK(ValueOr(j, "big", 1) == 1);    // past int's range: the fallback, not a wrap
  CHECK(ValueOr(j, "big", int64_t{0}) == 5000000000);
  CHECK(ValueOr(j, "f", 0) == 0);  // not a whole number for an integer
  CHECK(ValueOr(j, "f", 0.0) == 2.5);
  CHECK(ValueOr(j, "n", 0.0) == 7.0);
  CHECK(ValueOr(j, "obj", 4) == 4);
  CHECK(ValueOr(j, "missing", 9) == 9);
  CHECK(ValueOr(nlohmann::json::array(), "s", 1) == 1);  // not an object
}
