#include "common/json_fields.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace framemill {
namespace {

std::string TypeName(const nlohmann::json& v) { return v.type_name(); }

}  // namespace

FieldReader::FieldReader(const nlohmann::json& object, std::string path, StatusCode code)
    : object_(object), path_(std::move(path)), code_(code) {
  if (!object_.is_object()) {
    SetError(path_ + ": expected a JSON object, got " + TypeName(object_));
  }
}

const nlohmann::json* FieldReader::Find(const char* key) {
  seen_.insert(key);
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end()) return nullptr;
  return &*it;
}

void FieldReader::SetError(const std::string& message) {
  if (status_.ok()) status_ = Status(code_, message);
}

void FieldReader::Fail(const char* key, const std::string& message) {
  SetError(Child(key) + ": " + message);
}

void FieldReader::Adopt(const Status& child) {
  if (status_.ok() && !child.ok()) status_ = child;
}

void FieldReader::RequiredString(const char* key, std::string* out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) {
    if (object_.is_object()) Fail(key, "required key is missing");
    return;
  }
  String(key, out);
}

void FieldReader::String(const char* key, std::string* out, bool allow_empty) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_string()) return Fail(key, "expected a string, got " + TypeName(*v));
  std::string s = v->get<std::string>();
  if (s.empty() && !allow_empty) return Fail(key, "must not be empty");
  *out = std::move(s);
}

void FieldReader::Bool(const char* key, bool* out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_boolean()) return Fail(key, "expected true or false, got " + TypeName(*v));
  *out = v->get<bool>();
}

void FieldReader::Int(const char* key, int64_t* out, int64_t min, int64_t max) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_number_integer()) return Fail(key, "expected an integer, got " + TypeName(*v));
  // Unsigned values above INT64_MAX are out of every range we accept.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Fail(key, "value out of range");
  }
  int64_t x = v->get<int64_t>();
  if (x < min || x > max) {
    return Fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                         ", got " + std::to_string(x));
  }
  *out = x;
}

void FieldReader::Int(const char* key, int* out, int min, int max) {
  int64_t x = *out;
  Int(key, &x, min, max);
  *out = static_cast<int>(x);
}

void FieldReader::Double(const char* key, double* out, double min, double max) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_number()) return Fail(key, "expected a number, got " + TypeName(*v));
  double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    std::ostringstream msg;
    msg << "must be between " << min << " and " << max << ", got " << x;
    return Fail(key, msg.str());
  }
  *out = x;
}

void FieldReader::StringList(const char* key, std::vector<std::string>* out) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_array()) return Fail(key, "expected a list of strings, got " + TypeName(*v));
  std::vector<std::string> list;
  for (const nlohmann::json& item : *v) {
    if (!item.is_string() || item.get<std::string>().empty()) {
      return Fail(key, "expected a list of non-empty strings");
    }
    list.push_back(item.get<std::string>());
  }
  *out = std::move(list);
}

void FieldReader::IntList(const char* key, std::vector<int>* out, int min, int max) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return;
  if (!v->is_array()) return Fail(key, "expected a list of integers, got " + TypeName(*v));
  std::vector<int> list;
  for (const nlohmann::json& item : *v) {
    if (!item.is_number_integer() || item.get<int64_t>() < min || item.get<int64_t>() > max) {
      return Fail(key, "expected a list of integers from " + std::to_string(min) + " to " +
                           std::to_string(max));
    }
    int x = item.get<int>();
    if (std::find(list.begin(), list.end(), x) != list.end()) {
      return Fail(key, std::to_string(x) + " is listed twice");
    }
    list.push_back(x);
  }
  *out = std::move(list);
}

const nlohmann::json* FieldReader::Object(const char* key) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    Fail(key, "expected an object, got " + TypeName(*v));
    return nullptr;
  }
  return v;
}

Status FieldReader::Finish() {
  if (status_.ok() && object_.is_object()) {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (seen_.count(it.key()) == 0) {
        SetError(path_ + "." + it.key() + ": unknown key");
        break;
      }
    }
  }
  return status_;
}

int JsonNestingDepth(const std::string& text, int stop_at) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_at) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& what,
                                     StatusCode code) {
  if (JsonNestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    return Status(code,
                  what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  // The keys seen in each object being parsed, innermost last (at most kMaxJsonDepth sets).
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto check = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      keys.emplace_back();
    } else if (event == Event::object_end && !keys.empty()) {
      keys.pop_back();
    } else if (event == Event::key && !keys.empty() && parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  try {
    nlohmann::json j = nlohmann::json::parse(text, check);
    if (!duplicate.empty()) {
      return Status(code, what + ": key \"" + duplicate + "\" appears twice in one object");
    }
    return j;
  } catch (const std::exception& e) {  // parse_error, and bad_alloc on absurd input
    // The parser's own words name the line and column, then quote the bytes it read last: those
    // may be another user's (a file named where a JSON file was expected), so they stay out.
    std::string why = e.what();
    if (const size_t quote = why.find("; last read:"); quote != std::string::npos) {
      why.erase(quote);
    }
    return Status(code, what + ": malformed JSON: " + why);
  }
}

Result<std::string> ReadRegularFile(int fd, int64_t max_bytes, const std::string& what,
                                    StatusCode code) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status(code, what + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status(code, what + ": not a regular file");
  if (st.st_size > max_bytes) {
    return Status(code, what + ": file is " + std::to_string(st.st_size) +
                            " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(code, what + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // The file may grow after the fstat: the limit holds for what is read.
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return Status(code,
                    what + ": more than the limit of " + std::to_string(max_bytes) + " bytes");
    }
  }
  return text;
}

Result<nlohmann::json> ReadJsonFile(const std::string& path, int64_t max_bytes, StatusCode code,
                                    LinkPolicy links) {
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (links == LinkPolicy::kNoFollow) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ELOOP && links == LinkPolicy::kNoFollow) {
      return Status(code, path + ": is a symbolic link (not followed)");
    }
    return Status(code, path + ": cannot read: " + std::strerror(errno));
  }
  Result<std::string> text = ReadRegularFile(fd, max_bytes, path, code);
  ::close(fd);
  if (!text.ok()) return text.status();
  return ParseJsonText(*text, path, code);
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace framemill
