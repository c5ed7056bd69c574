#include "supervisor/plan/part_plan.h"

#include <cstdint>
#include <cstdlib>

namespace framemill {

std::string PartRef::ToString() const {
  return std::to_string(index) + "/" + std::to_string(count);
}

Result<PartRef> ParsePartRef(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [](const std::string& s, int* out) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *out = std::atoi(s.c_str());
    return true;
  };
  PartRef p;
  if (slash == std::string::npos || !number(text.substr(0, slash), &p.index) ||
      !number(text.substr(slash + 1), &p.count)) {
    return Status(StatusCode::kInvalidJob, "--part " + text + ": expected I/N, e.g. 2/3");
  }
  if (p.count < 1 || p.count > kMaxParts || p.index < 1 || p.index > p.count) {
    return Status(StatusCode::kInvalidJob, "--part " + text + ": need 1 <= I <= N <= " +
                                               std::to_string(kMaxParts));
  }
  return p;
}

Result<std::vector<PartRange>> SplitIntoParts(const JobPlan& plan, int count) {
  const int64_t s = static_cast<int64_t>(plan.segments.size());
  if (count < 1 || count > kMaxParts) {
    return Status(StatusCode::kInvalidJob, "parts: need 1.." + std::to_string(kMaxParts));
  }
  if (s < count) {
    return Status(StatusCode::kInvalidJob,
                  std::to_string(count) + " parts asked of a job of " + std::to_string(s) +
                      " segments: at most one part per segment (lower segment_seconds)");
  }
  std::vector<PartRange> parts;
  for (int i = 0; i < count; ++i) {
    PartRange r;
    r.first_segment = i * s / count;
    r.segment_count = (i + 1) * s / count - r.first_segment;
    r.first_frame = plan.segments[r.first_segment].first_frame;
    const SegmentPlan& last = plan.segments[r.end_segment() - 1];
    r.frames = last.first_frame + last.frames - r.first_frame;
    parts.push_back(r);
  }
  return parts;
}

nlohmann::json PartsPlan::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const PartRange& r : parts) {
    list.push_back({{"first_segment", r.first_segment},
                    {"segments", r.segment_count},
                    {"first_frame", r.first_frame},
                    {"frames", r.frames}});
  }
  return {{"version", kPartsPlanVersion},
          {"input", input},
          {"model", model},
          {"output", output},
          {"frame_count", frame_count},
          {"chunk_frames", chunk_frames},
          {"chunks_per_segment", chunks_per_segment},
          {"segments", segments},
          {"parts", list}};
}

Result<PartsPlan> ParsePartsPlan(const nlohmann::json& j) {
  auto bad = [](const std::string& why) {
    return Status(StatusCode::kInvalidJob, "parts plan: " + why);
  };
  try {
    if (!j.is_object() || j.value("version", 0) != kPartsPlanVersion) {
      return bad("not a version " + std::to_string(kPartsPlanVersion) + " plan");
    }
    PartsPlan p;
    p.input = j.at("input").get<std::string>();
    p.model = j.at("model").get<std::string>();
    p.output = j.at("output").get<std::string>();
    p.frame_count = j.at("frame_count").get<int64_t>();
    p.chunk_frames = j.at("chunk_frames").get<int32_t>();
    p.chunks_per_segment = j.at("chunks_per_segment").get<int64_t>();
    p.segments = j.at("segments").get<int64_t>();
    int64_t next_segment = 0, next_frame = 0;
    for (const nlohmann::json& r : j.at("parts")) {
      PartRange range;
      range.first_segment = r.at("first_segment").get<int64_t>();
      range.segment_count = r.at("segments").get<int64_t>();
      range.first_frame = r.at("first_frame").get<int64_t>();
      range.frames = r.at("frames").get<int64_t>();
      if (range.first_segment != next_segment || range.segment_count < 1 ||
          range.first_frame != next_frame || range.frames < 1) {
        return bad("part " + std::to_string(p.parts.size() + 1) + " does not follow the one before");
      }
      next_segment = range.end_segment();
      next_frame = range.first_frame + range.frames;
      p.parts.push_back(range);
    }
    if (p.parts.empty() || p.parts.size() > static_cast<size_t>(kMaxParts) ||
        next_segment != p.segments || next_frame != p.frame_count) {
      return bad("its parts do not cover the job's segments and frames");
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
}

Status SamePartsPlan(const PartsPlan& file, const PartsPlan& mine) {
  auto differs = [](const std::string& what, const std::string& a, const std::string& b) {
    return Status(StatusCode::kInvalidJob, "the job's parts plan was made with " + what + " " + a +
                                               ", this run has " + b +
                                               " (remove the parts directory to start over)");
  };
  if (file.input != mine.input) return differs("input", file.input, mine.input);
  if (file.model != mine.model) return differs("model", file.model, mine.model);
  if (file.output != mine.output) return differs("output", file.output, mine.output);
  if (file.frame_count != mine.frame_count) {
    return differs("frame count", std::to_string(file.frame_count),
                   std::to_string(mine.frame_count));
  }
  if (file.chunk_frames != mine.chunk_frames || file.chunks_per_segment != mine.chunks_per_segment) {
    return differs("chunks of", std::to_string(file.chunk_frames) + " frames, " +
                                    std::to_string(file.chunks_per_segment) + " per segment",
                   std::to_string(mine.chunk_frames) + " and " +
                       std::to_string(mine.chunks_per_segment));
  }
  if (file.parts.size() != mine.parts.size()) {
    return differs("parts", std::to_string(file.parts.size()), std::to_string(mine.parts.size()));
  }
  return Status::Ok();
}

}  // namespace framemill
