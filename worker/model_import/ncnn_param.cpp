#include "worker/model_import/ncnn_param.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace framemill {
namespace {

constexpr long kMagic = 7767517;
constexpr int kArrayKeyBase = -23300;  // an array's key is kArrayKeyBase - id
constexpr int kMaxParamId = 31;        // ncnn keeps 32 parameters a layer

Status Bad(const std::string& label, int line, const std::string& what) {
  return Status(StatusCode::kModelInvalid, label + " line " + std::to_string(line) + ": " + what);
}

// A whole token as a decimal int (no trailing characters).
bool ParseInt(const std::string& s, long* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// One scalar as ncnn spells it: a float when it has a '.' or an exponent, else an int.
bool ParseNumber(const std::string& s, double* out, bool* is_float) {
  *is_float = s.find_first_of(".eE") != std::string::npos;
  if (!*is_float) {
    long v = 0;
    if (!ParseInt(s, &v)) return false;
    *out = static_cast<double>(v);
    return true;
  }
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// "key=value" into layer->params.
Status ParseParam(const std::string& token, NcnnLayer* layer, const std::string& label) {
  auto bad = [&](const std::string& what) {
    return Bad(label, layer->line,
               layer->type + " " + layer->name + ": parameter \"" + token + "\" " + what);
  };
  size_t eq = token.find('=');
  long key = 0;
  if (eq == std::string::npos || !ParseInt(token.substr(0, eq), &key)) {
    return bad("is not KEY=VALUE");
  }
  NcnnValue value;
  int id = static_cast<int>(key);
  std::string text = token.substr(eq + 1);
  if (key <= kArrayKeyBase) {
    id = static_cast<int>(kArrayKeyBase - key);
    value.is_array = true;
    std::vector<std::string> parts = Split(text, ',');
    long count = 0;
    if (parts.empty() || !ParseInt(parts[0], &count) || count < 0 ||
        static_cast<size_t>(count) != parts.size() - 1) {
      return bad("is not an array \"COUNT,v1,...\" with COUNT values");
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      double v = 0;
      bool is_float = false;
      if (!ParseNumber(parts[i], &v, &is_float)) return bad("has a value that is not a number");
      if (i > 1 && is_float != value.is_float) return bad("mixes int and float values");
      value.is_float = is_float;
      value.values.push_back(v);
    }
  } else {
    double v = 0;
    if (!ParseNumber(text, &v, &value.is_float)) return bad("has a value that is not a number");
    value.values.push_back(v);
  }
  if (id < 0 || id > kMaxParamId)
    return bad("has a key outside ncnn's ids 0.." + std::to_string(kMaxParamId));
  if (!layer->params.emplace(id, value).second) return bad("repeats key " + std::to_string(id));
  return Status::Ok();
}

}  // namespace

std::string NcnnLayer::Where() const {
  return file + " line " + std::to_string(line) + " (" + type + " " + name + ")";
}

Result<int> NcnnLayer::Int(int id, int def) const {
  auto it = params.find(id);
  if (it == params.end()) return def;
  if (it->second.is_float || it->second.is_array) {
    return Status(StatusCode::kModelInvalid,
                  Where() + ": parameter " + std::to_string(id) + " must be an int");
  }
  return static_cast<int>(it->second.values[0]);
}

Result<float> NcnnLayer::Float(int id, float def) const {
  auto it = params.find(id);
  if (it == params.end()) return def;
  if (!it->second.is_float || it->second.is_array) {
    return Status(StatusCode::kModelInvalid, Where() + ": parameter " + std::to_string(id) +
                                                 " must be a float (spelled with '.' or 'e')");
  }
  return static_cast<float>(it->second.values[0]);
}

Result<std::vector<float>> NcnnLayer::FloatArray(int id) const {
  auto it = params.find(id);
  if (it == params.end()) return std::vector<float>();
  if (!it->second.is_array || (!it->second.is_float && !it->second.values.empty())) {
    return Status(StatusCode::kModelInvalid,
                  Where() + ": parameter " + std::to_string(id) + " must be an array of floats");
  }
  return std::vector<float>(it->second.values.begin(), it->second.values.end());
}

Status NcnnLayer::OnlyKeys(const std::vector<int>& known) const {
  for (const auto& [id, value] : params) {
    bool ok = false;
    for (int k : known) ok = ok || k == id;
    if (!ok) {
      return Status(StatusCode::kModelInvalid,
                    Where() + ": parameter " + std::to_string(id) + " is not supported");
    }
  }
  return Status::Ok();
}

Result<NcnnGraph> ParseNcnnParam(const std::string& text, const std::string& label) {
  std::vector<std::string> lines = Split(text, '\n');
  for (std::string& l : lines) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
  }
  auto tokens = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> t;
    std::string s;
    while (in >> s) t.push_back(s);
    return t;
  };
  if (lines.empty() || tokens(lines[0]) != std::vector<std::string>{std::to_string(kMagic)}) {
    return Bad(
        label, 1,
        "not an ncnn param file (the first line is not the magic " + std::to_string(kMagic) + ")");
  }
  std::vector<std::string> counts =
      lines.size() > 1 ? tokens(lines[1]) : std::vector<std::string>();
  long layer_count = 0, blob_count = 0;
  if (counts.size() != 2 || !ParseInt(counts[0], &layer_count) ||
      !ParseInt(counts[1], &blob_count) || layer_count <= 0 || blob_count <= 0) {
    return Bad(label, 2, "expected \"LAYER_COUNT BLOB_COUNT\" (two positive ints)");
  }

  NcnnGraph graph;
  graph.blob_count = static_cast<int>(blob_count);
  std::set<std::string> layer_names, made, consumed;
  for (size_t i = 2; i < lines.size(); ++i) {
    int line = static_cast<int>(i + 1);
    std::vector<std::string> t = tokens(lines[i]);
    if (t.empty()) continue;
    if (static_cast<long>(graph.layers.size()) == layer_count) {
      return Bad(label, line,
                 "more layers than the " + std::to_string(layer_count) + " the file declares");
    }
    NcnnLayer layer;
    layer.file = label;
    layer.line = line;
    long n_in = 0, n_out = 0;
    if (t.size() < 4 || !ParseInt(t[2], &n_in) || !ParseInt(t[3], &n_out) || n_in < 0 ||
        n_out < 0 || t.size() < static_cast<size_t>(4 + n_in + n_out)) {
      return Bad(label, line, "expected \"TYPE NAME INPUTS OUTPUTS\" and that many blob names");
    }
    layer.type = t[0];
    layer.name = t[1];
    if (!layer_names.insert(layer.name).second) {
      return Bad(label, line, "layer name \"" + layer.name + "\" is used twice");
    }
    for (long k = 0; k < n_in; ++k) {
      const std::string& blob = t[4 + k];
      if (made.count(blob) == 0) {
        return Bad(label, line,
                   layer.type + " " + layer.name + ": input blob \"" + blob +
                       "\" is not made by an earlier layer");
      }
      if (!consumed.insert(blob).second) {
        return Bad(label, line,
                   layer.type + " " + layer.name + ": blob \"" + blob +
                       "\" is already an input of another layer (ncnn needs a "
                       "Split to use a blob twice)");
      }
      layer.bottoms.push_back(blob);
    }
    for (long k = 0; k < n_out; ++k) {
      const std::string& blob = t[4 + n_in + k];
      if (!made.insert(blob).second) {
        return Bad(label, line,
                   layer.type + " " + layer.name + ": blob \"" + blob + "\" is made twice");
      }
      layer.tops.push_back(blob);
    }
    for (size_t k = 4 + n_in + n_out; k < t.size(); ++k) {
      FM_RETURN_IF_ERROR(ParseParam(t[k], &layer, label));
    }
    graph.layers.push_back(std::move(layer));
  }
  if (static_cast<long>(graph.layers.size()) != layer_count) {
    return Bad(label, static_cast<int>(lines.size()),
               "the file declares " + std::to_string(layer_count) + " layers and has " +
                   std::to_string(graph.layers.size()));
  }
  if (static_cast<long>(made.size()) != blob_count) {
    return Bad(label, 2,
               "the file declares " + std::to_string(blob_count) + " blobs and its layers make " +
                   std::to_string(made.size()));
  }
  return graph;
}

}  // namespace framemill
