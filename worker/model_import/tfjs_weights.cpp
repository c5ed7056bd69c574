#include "worker/model_import/tfjs_weights.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "common/json_fields.h"

namespace framemill {
namespace {

constexpr int64_t kMaxShardBytes = int64_t{4} << 30;  // far above any published model's shard
constexpr int64_t kMaxElements = int64_t{1} << 31;

Status Invalid(const std::string& message) {
  return Status(StatusCode::kModelInvalid, "TF.js weights: " + message);
}

// One weight spec of a group: name, shape, and its byte count.
struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 1;
};

Result<Spec> ParseSpec(const nlohmann::json& w, size_t group) {
  if (!w.is_object() || !w.contains("name") || !w["name"].is_string() || !w.contains("shape") ||
      !w["shape"].is_array()) {
    return Invalid("group " + std::to_string(group) + ": a weight without a name or shape");
  }
  Spec s;
  s.name = w["name"].get<std::string>();
  std::string dtype = w.value("dtype", std::string("float32"));
  if (dtype != "float32") {
    return Invalid(s.name + ": dtype " + dtype + " (only float32 weights are imported)");
  }
  if (w.contains("quantization")) {
    return Invalid(s.name + ": quantized weights are not imported");
  }
  for (const nlohmann::json& d : w["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return Invalid(s.name + ": a bad shape");
    s.shape.push_back(d.get<int64_t>());
    // Checked before it can wrap: dimensions of 2^32 each would overflow to a small product.
    if (__builtin_mul_overflow(s.elements, s.shape.back(), &s.elements) ||
        s.elements > kMaxElements) {
      return Invalid(s.name + ": a shape too large");
    }
  }
  return s;
}

// The concatenated bytes of one group's shard files.
Result<std::string> ReadGroup(const nlohmann::json& paths, const std::string& dir, size_t group) {
  if (!paths.is_array() || paths.empty()) {
    return Invalid("group " + std::to_string(group) + " names no shard file");
  }
  std::string bytes;
  for (const nlohmann::json& p : paths) {
    if (!p.is_string()) return Invalid("group " + std::to_string(group) + ": a path not a string");
    const std::string name = p.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return Invalid("shard path \"" + name + "\" is not a file name beside model.json");
    }
    const std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      return Status(StatusCode::kInputMissing,
                    "TF.js weights: cannot open shard " + path + ": " + std::strerror(errno));
    }
    Result<std::string> part = ReadRegularFile(fd, kMaxShardBytes, path, StatusCode::kModelInvalid);
    ::close(fd);
    if (!part.ok()) return part.status();
    bytes += *part;
  }
  return bytes;
}

}  // namespace

Result<std::map<std::string, TfjsWeight>> ReadTfjsWeights(const nlohmann::json& manifest,
                                                          const std::string& dir) {
  if (!manifest.is_array()) return Invalid("\"weightsManifest\" is not a list");
  std::map<std::string, TfjsWeight> out;
  for (size_t g = 0; g < manifest.size(); ++g) {
    const nlohmann::json& group = manifest[g];
    if (!group.is_object() || !group.contains("weights") || !group["weights"].is_array()) {
      return Invalid("group " + std::to_string(g) + " has no \"weights\" list");
    }
    std::vector<Spec> specs;
    int64_t need = 0;
    for (const nlohmann::json& w : group["weights"]) {
      Result<Spec> s = ParseSpec(w, g);
      if (!s.ok()) return s.status();
      need += s->elements * 4;
      specs.push_back(std::move(*s));
    }
    Result<std::string> bytes = ReadGroup(group.value("paths", nlohmann::json()), dir, g);
    if (!bytes.ok()) return bytes.status();
    if (static_cast<int64_t>(bytes->size()) != need) {
      return Invalid("group " + std::to_string(g) + " (" + group["paths"].dump() +
                     "): the manifest's weights take " + std::to_string(need) +
                     " bytes, the shard files hold " + std::to_string(bytes->size()) +
                     " (truncated, padded or not this model's shard)");
    }
    int64_t offset = 0;
    for (Spec& s : specs) {
      // TF.js stores little-endian float32, as this host reads them.
      torch::Tensor t = torch::empty({s.elements}, torch::kFloat32);
      std::memcpy(t.data_ptr<float>(), bytes->data() + offset, s.elements * 4);
      offset += s.elements * 4;
      if (!torch::isfinite(t).all().item<bool>()) {
        return Invalid(s.name + ": holds values that are not finite (a corrupt shard)");
      }
      if (out.count(s.name) != 0) return Invalid(s.name + " is named twice in the manifest");
      TfjsWeight w{s.name, s.shape, t.view(s.shape)};
      out.emplace(s.name, std::move(w));
    }
  }
  return out;
}

}  // namespace framemill
