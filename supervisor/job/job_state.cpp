#include "supervisor/job/job_state.h"

#include <cstdint>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/mutex.h"

namespace framemill {
namespace {

constexpr int kStateVersion = 1;  // of state.json

}  // namespace

JobState::JobState(std::string workspace, const JobSpec& job, const JobPlan& plan,
                   int64_t chunks_per_segment, int64_t first_segment, int64_t end_segment)
    : workspace_(std::move(workspace)),
      job_(job),
      plan_(plan),
      chunks_per_segment_(chunks_per_segment),
      first_(first_segment),
      end_(end_segment < 0 ? static_cast<int64_t>(plan.segments.size()) : end_segment),
      bytes_(plan.segments.size(), -1) {}

std::string JobState::SegmentPath(int64_t index) const {
  char name[64];
  std::snprintf(name, sizeof(name), "/segment_%06lld.nut", static_cast<long long>(index));
  return workspace_ + name;
}

Status JobState::Load(bool write_back) {
  MutexLock lock(&mu_);  // no encoder runs yet: uncontended
  std::string path = workspace_ + "/state.json";
  if (PathExists(path)) {
    Result<nlohmann::json> j = ReadJsonFile(path, 64 << 20, StatusCode::kIo);
    if (!j.ok() || !j->is_object()) {
      spdlog::warn("{}: unreadable ({}); starting the job over", path,
                   j.ok() ? "not a JSON object" : j.status().message());
    } else {
      const nlohmann::json& st = *j;
      // Names are saved with bytes that are not UTF-8 replaced: compare them the same way.
      auto saved = [](const std::string& name) {
        return nlohmann::json::parse(DumpJson(nlohmann::json(name))).get<std::string>();
      };
      bool same = ValueOr(st, "version", 0) == kStateVersion &&
                  ValueOr<std::string>(st, "input", "") == saved(job_.input) &&
                  ValueOr<std::string>(st, "model", "") == saved(job_.model) &&
                  ValueOr(st, "frame_count", int64_t{-1}) == plan_.frame_count &&
                  ValueOr(st, "chunk_frames", -1) == plan_.chunk_frames &&
                  ValueOr(st, "chunks_per_segment", int64_t{-1}) == chunks_per_segment_ &&
                  ValueOr(st, "first_segment", int64_t{0}) == first_ &&
                  ValueOr(st, "end_segment", static_cast<int64_t>(plan_.segments.size())) == end_;
      std::string changed;  // the identity's keys that differ from the saved one's
      if (same && !identity_.is_null()) {
        const nlohmann::json saved_identity = st.value("identity", nlohmann::json::object());
        for (const auto& [key, value] : identity_.items()) {
          if (!saved_identity.contains(key) || saved_identity[key] != value) {
            changed += (changed.empty() ? "" : ", ") + key;
          }
        }
      }
      if (!same) {
        spdlog::warn("{}: made for another plan; starting the job over", path);
      } else if (!changed.empty()) {
        spdlog::warn("the job's {} changed since its finished segments were made; starting the "
                     "job over",
                     changed);
      } else {
        for (const nlohmann::json& seg : ArrayOr(st, "segments_done")) {
          int64_t index = ValueOr(seg, "index", int64_t{-1});
          int64_t bytes = ValueOr(seg, "bytes", int64_t{-1});
          struct stat sb {};
          if (index != first_ + resumed_ || index >= end_ ||
              ::stat(SegmentPath(index).c_str(), &sb) != 0 || sb.st_size != bytes ||
              ValueOr(seg, "frames", int64_t{-1}) != plan_.segments[index].frames) {
            break;
          }
          bytes_[index] = bytes;
          ++resumed_;
        }
      }
    }
  }
  done_.store(resumed_);
  if (!write_back) return Status::Ok();
  // The plan, once, for people and tools reading the workspace; state.json, rewritten after
  // every segment, names the plan by its sizes only.
  FM_RETURN_IF_ERROR(
      AtomicWriteFile(workspace_ + "/plan.json", DumpJson(plan_.ToJson(), 1) + "\n"));
  return Save();
}

Status JobState::Finished(int64_t index, int64_t bytes) {
  MutexLock lock(&mu_);
  bytes_[index] = bytes;
  done_.fetch_add(1);
  return Save();
}

Status JobState::Save() {
  nlohmann::json done = nlohmann::json::array();
  for (size_t i = static_cast<size_t>(first_); i < static_cast<size_t>(end_) && bytes_[i] >= 0;
       ++i) {
    int64_t index = static_cast<int64_t>(i);
    done.push_back(
        {{"index", index}, {"frames", plan_.segments[index].frames}, {"bytes", bytes_[i]}});
  }
  nlohmann::json st = {{"version", kStateVersion},
                       {"input", job_.input},
                       {"model", job_.model},
                       {"output", job_.output},
                       {"frame_count", plan_.frame_count},
                       {"chunk_frames", plan_.chunk_frames},
                       {"chunks_per_segment", chunks_per_segment_},
                       {"first_segment", first_},
                       {"end_segment", end_},
                       {"segments_done", done}};
  if (!identity_.is_null()) st["identity"] = identity_;
  return AtomicWriteFile(workspace_ + "/state.json", DumpJson(st, 1) + "\n");
}

}  // namespace framemill
