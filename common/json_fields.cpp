#include "common/json_fields.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

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

Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& what,
                                     StatusCode code) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status(code, what + ": malformed JSON: " + e.what());
  }
}

Result<nlohmann::json> ReadJsonFile(const std::string& path, int64_t max_bytes, StatusCode code) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(code, path + ": cannot read: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Status(code, path + ": not a regular file");
  if (st.st_size > max_bytes) {
    return Status(code, path + ": file is " + std::to_string(st.st_size) +
                            " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(code, path + ": cannot open for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  return ParseJsonText(buf.str(), path, code);
}

}  // namespace framemill
