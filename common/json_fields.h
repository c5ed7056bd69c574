// Strict reading of one JSON object into typed fields. Every error names the full key path
// ("job.encoder.crf: expected an integer, got string"), and Finish() rejects keys nobody read,
// so a typo in a job or config file is an error instead of a silently ignored setting.
// Not thread-safe; one reader per object, used once.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

class FieldReader {
 public:
  // `path` names the object in messages ("job", "config.defaults"). `code` is the StatusCode of
  // every error this reader reports. If `object` is not a JSON object, status() is already an
  // error.
  FieldReader(const nlohmann::json& object, std::string path, StatusCode code);

  // Each getter leaves *out untouched when the key is absent (so it keeps its default), and
  // records the first error when the key is present with a wrong type or out of range.
  void RequiredString(const char* key, std::string* out);
  void String(const char* key, std::string* out, bool allow_empty = false);
  void Bool(const char* key, bool* out);
  void Int(const char* key, int64_t* out, int64_t min, int64_t max);
  void Int(const char* key, int* out, int min, int max);
  void Double(const char* key, double* out, double min, double max);
  void StringList(const char* key, std::vector<std::string>* out);
  // A list of integers, each in [min, max], none twice.
  void IntList(const char* key, std::vector<int>* out, int min, int max);

  // The nested object at `key`, or nullptr when absent or not an object (the latter is recorded
  // as an error). Read it with a child FieldReader whose path is Child(key).
  const nlohmann::json* Object(const char* key);
  std::string Child(const char* key) const { return path_ + "." + key; }

  // Records an error for `key` found by a caller-side check (a value with a bad shape).
  void Fail(const char* key, const std::string& message);

  // Records the first error of a child reader (its message already names the full path).
  void Adopt(const Status& child);

  // The first error seen, or ok.
  const Status& status() const { return status_; }

  // Checks for keys that no getter asked for, then returns status().
  Status Finish();

 private:
  const nlohmann::json* Find(const char* key);
  void SetError(const std::string& message);

  const nlohmann::json& object_;
  std::string path_;
  StatusCode code_;
  std::set<std::string> seen_;
  Status status_;
};

// Parses `text` as JSON; a syntax error becomes a Status of `code` naming `what` (a file name).
Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& what,
                                     StatusCode code);

// Reads a whole file (refusing files over `max_bytes`) and parses it as JSON.
Result<nlohmann::json> ReadJsonFile(const std::string& path, int64_t max_bytes, StatusCode code);

}  // namespace framemill
