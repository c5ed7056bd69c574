#include "common/config.h"

#include <cstdlib>
#include <regex>
#include <unistd.h>

#include "common/json_fields.h"

namespace framemill {
namespace {

constexpr const char* kSystemConfigPath = "/etc/framemill/framemill.json";

void ReadEncoder(FieldReader& parent, StatusCode code, EncoderSettings* enc) {
  const nlohmann::json* obj = parent.Object("encoder");
  if (obj == nullptr) return;
  FieldReader r(*obj, parent.Child("encoder"), code);
  r.String("codec", &enc->codec);
  r.Int("crf", &enc->crf, -1, 63);
  r.String("preset", &enc->preset, /*allow_empty=*/true);  // "" = the encoder has no presets
  r.String("pix_fmt", &enc->pix_fmt);
  parent.Adopt(r.Finish());
}

bool ValidDevice(const std::string& d) {
  static const std::regex kDevice("auto|cpu|cuda|cuda:[0-9]{1,2}");
  return std::regex_match(d, kDevice);
}

}  // namespace

Status ReadJobSettings(const nlohmann::json& object, const std::string& path, StatusCode code,
                       JobSettings* s, bool allow_unknown_keys) {
  FieldReader r(object, path, code);
  r.Int("chunk_frames", &s->chunk_frames, 1, kMaxChunkFrames);
  r.Double("segment_seconds", &s->segment_seconds, 0.001, 24 * 3600.0);
  r.Int("workers", &s->workers, 1, kMaxWorkers);
  r.Int("batch", &s->batch, 1, kMaxBatch);
  r.String("device", &s->device);
  if (r.status().ok() && !ValidDevice(s->device)) {
    r.Fail("device", "must be auto, cpu, cuda or cuda:N, got \"" + s->device + "\"");
  }
  r.Int("max_attempts", &s->max_attempts, 1, kMaxAttempts);
  ReadEncoder(r, code, &s->encoder);
  return allow_unknown_keys ? r.status() : r.Finish();
}

Result<Config> ParseConfig(const nlohmann::json& object) {
  Config c;
  FieldReader r(object, "config", StatusCode::kInvalidConfig);
  if (const nlohmann::json* d = r.Object("defaults")) {
    Status s = ReadJobSettings(*d, r.Child("defaults"), StatusCode::kInvalidConfig, &c.defaults,
                               /*allow_unknown_keys=*/false);
    if (!s.ok()) return s;
  }
  r.String("ffmpeg", &c.ffmpeg);
  r.String("ffprobe", &c.ffprobe);
  r.String("worker_binary", &c.worker_binary);
  r.Int("arena_mb", &c.arena_mb, 16, 1 << 20);
  r.Double("worker_start_timeout_s", &c.worker_start_timeout_s, 1, 24 * 3600.0);
  r.String("log_level", &c.log_level);
  static const std::regex kLevels("trace|debug|info|warn|error");
  if (r.status().ok() && !std::regex_match(c.log_level, kLevels)) {
    r.Fail("log_level", "must be trace, debug, info, warn or error");
  }
  Status s = r.Finish();
  if (!s.ok()) return s;
  return c;
}

Result<Config> LoadConfig(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    const char* env = std::getenv("FRAMEMILL_CONFIG");
    if (env != nullptr && *env != '\0') path = env;
  }
  if (path.empty() && ::access(kSystemConfigPath, R_OK) == 0) path = kSystemConfigPath;
  if (path.empty()) return Config{};
  Result<nlohmann::json> j = ReadJsonFile(path, kMaxJobFileBytes, StatusCode::kInvalidConfig);
  if (!j.ok()) return j.status();
  Result<Config> c = ParseConfig(*j);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

}  // namespace framemill
