// Strict reading of one JSON object into typed fields. Every error names the full key path
// ("job.encoder.crf: expected an integer, got string"), and Finish() rejects keys nobody read,
// so a typo in a job or config file is an error instead of a silently ignored setting.
// Not thread-safe; one reader per object, used once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
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

  // Marks `key` as read by someone else (a sibling reader over the same object), so that
  // Finish() does not call it unknown.
  void Skip(const char* key) { seen_.insert(key); }

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

// The mode among `modes` whose Name() is `name`; nullopt for none. (An enumeration's Parse.)
template <typename Mode>
std::optional<Mode> FindByName(const std::string& name, std::initializer_list<Mode> modes) {
  for (Mode m : modes) {
    if (name == Name(m)) return m;
  }
  return std::nullopt;
}

// Whether ReadEnum's error quotes the value it refused.
enum class EnumError {
  kQuoteValue,  // "must be auto, on or off, got \"maybe\""
  kNamesOnly,   // "must be auto, keep or drop"
};

// Reads the enumerated value under `key` into `mode` (left as it is when absent); a name that
// `parse` does not know fails the key with the `accepted` names.
template <typename Mode, typename Parse>
void ReadEnum(FieldReader& r, const char* key, Mode* mode, Parse parse, const char* accepted,
              EnumError error = EnumError::kQuoteValue) {
  std::string name = Name(*mode);
  r.String(key, &name);
  if (!r.status().ok()) return;
  std::optional<Mode> parsed = parse(name);
  if (parsed) {
    *mode = *parsed;
  } else if (error == EnumError::kQuoteValue) {
    r.Fail(key, std::string("must be ") + accepted + ", got \"" + name + "\"");
  } else {
    r.Fail(key, std::string("must be ") + accepted);
  }
}

// `object[key]` when it is there and of T's kind (a string for std::string; a whole number in
// T's range for an integral T; any number for a floating T), else `fallback`. Never throws, and
// never converts out of range: for optional fields of files a user or another process wrote,
// where nlohmann's value() throws on a value of another type.
template <typename T>
T ValueOr(const nlohmann::json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    if (it->is_number_unsigned()) {
      const uint64_t v = it->template get<uint64_t>();
      return v <= static_cast<uint64_t>(std::numeric_limits<T>::max()) ? static_cast<T>(v)
                                                                       : fallback;
    }
    if (!it->is_number_integer()) return fallback;
    const int64_t v = it->template get<int64_t>();
    if constexpr (std::is_signed_v<T>) {
      return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                     v <= static_cast<int64_t>(std::numeric_limits<T>::max())
                 ? static_cast<T>(v)
                 : fallback;
    } else {
      return v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max() ? static_cast<T>(v)
                                                                                 : fallback;
    }
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

// `object[key]` when it is an array, else an empty array (ValueOr's rule, for a list of records
// each then read with ValueOr).
inline const nlohmann::json& ArrayOr(const nlohmann::json& object, const char* key) {
  static const nlohmann::json* const empty = new nlohmann::json(nlohmann::json::array());
  if (!object.is_object()) return *empty;
  const auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : *empty;
}

// Deepest nesting of arrays and objects that ParseJsonText accepts. Job and config files need
// 3; the limit keeps every recursive walk of a parsed value (dump, compare, copy) far from the
// stack's end.
inline constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, found by one pass over its bytes (strings
// and escapes skipped), without parsing and without recursion. Stops counting past `stop_at`.
int JsonNestingDepth(const std::string& text, int stop_at);

// Parses `text` as JSON. Refused, as a Status of `code` naming `what` (a file name): a syntax
// error (bytes that are not UTF-8 included), nesting deeper than kMaxJsonDepth, and an object
// that names a key twice (which of two values counts would otherwise depend on the reader).
// Never throws.
Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& what,
                                     StatusCode code);

// Whether ReadJsonFile follows a symbolic link at the last component of its path.
enum class LinkPolicy {
  kNoFollow,  // a link is refused (files in places other users can write: the spool)
  kFollow,    // a link is followed (files the administrator or the caller names)
};

// Reads a whole file and parses it as JSON (ParseJsonText). The file is opened once with
// O_NONBLOCK (a FIFO never blocks) and, with kNoFollow, O_NOFOLLOW; what is read must be a
// regular file (fstat on the open file) of at most `max_bytes`.
Result<nlohmann::json> ReadJsonFile(const std::string& path, int64_t max_bytes, StatusCode code,
                                    LinkPolicy links = LinkPolicy::kNoFollow);

// The whole content of the open file `fd` (from its current offset), refusing anything that is
// not a regular file or is over `max_bytes`. `what` names it in errors of `code`.
Result<std::string> ReadRegularFile(int fd, int64_t max_bytes, const std::string& what,
                                    StatusCode code);

// `j` as text, with bytes that are not UTF-8 inside its strings replaced by U+FFFD: never
// throws on a string from a file name, a child's stderr or a job file. `indent` < 0 = one line.
// Every JSON that framemill writes or prints goes through this.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

}  // namespace framemill
