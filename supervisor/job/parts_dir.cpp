#include "supervisor/job/parts_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "supervisor/job/job_state.h"
#include "supervisor/media/source_intake.h"

namespace framemill {
namespace {

constexpr const char* kPlanName = "plan.json";
constexpr int64_t kMaxPlanBytes = 16 << 20;

}  // namespace

std::string PartsDirFor(const std::string& job_path) {
  return ResolvePath(DirName(job_path)) + "/" + BaseName(job_path) + ".parts";
}

std::string PartDir(const std::string& parts_dir, const PartRef& part) {
  return parts_dir + "/part-" + std::to_string(part.index) + "-of-" + std::to_string(part.count);
}

Result<PartsPlan> MakePartsPlan(const JobSpec& job, const JobPlan& plan, int count) {
  Result<std::vector<PartRange>> parts = SplitIntoParts(plan, count);
  if (!parts.ok()) return parts.status();
  PartsPlan p;
  p.input = job.input;
  p.model = job.model;
  p.output = job.output;
  p.frame_count = plan.frame_count;
  p.chunk_frames = plan.chunk_frames;
  p.chunks_per_segment = plan.chunks_per_segment;
  p.segments = static_cast<int64_t>(plan.segments.size());
  p.parts = std::move(*parts);
  return p;
}

Result<PartsPlan> ReadPartsPlan(const std::string& parts_dir) {
  const std::string path = parts_dir + "/" + kPlanName;
  if (!PathExists(path)) {
    return Status(StatusCode::kInvalidJob,
                  path + ": no parts plan (run the parts first: framemill run JOB --part I/N)");
  }
  Result<nlohmann::json> j = ReadJsonFile(path, kMaxPlanBytes, StatusCode::kInvalidJob);
  if (!j.ok()) return j.status();
  Result<PartsPlan> plan = ParsePartsPlan(*j);
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

Result<PartsPlan> WritePartsPlanOnce(const std::string& parts_dir, const PartsPlan& mine) {
  FM_RETURN_IF_ERROR(MakeDirectories(parts_dir));
  if (!PathExists(parts_dir + "/" + kPlanName)) {
    UniqueFd dir(::open(parts_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) {
      return Status(StatusCode::kIo, "open " + parts_dir + ": " + std::strerror(errno));
    }
    Result<CreatedFile> tmp = CreateExclusiveAt(dir.get(), ".plan.", ".tmp", 0644);
    if (!tmp.ok()) return tmp.status();
    Status s = WriteAllToFd(tmp->fd.get(), DumpJson(mine.ToJson(), 1) + "\n", kPlanName);
    if (s.ok() && ::fsync(tmp->fd.get()) != 0) {
      s = Status(StatusCode::kIo, std::string("fsync parts plan: ") + std::strerror(errno));
    }
    // kNoReplace: another part that got there first keeps its plan, and this one reads it.
    if (s.ok()) {
      s = RenameCheckedAt(dir.get(), tmp->name, tmp->fd.get(), kPlanName, RenameMode::kNoReplace);
    }
    if (!s.ok()) ::unlinkat(dir.get(), tmp->name.c_str(), 0);
    if (!s.ok() && !PathExists(parts_dir + "/" + kPlanName)) return s;
  }
  Result<PartsPlan> file = ReadPartsPlan(parts_dir);
  if (!file.ok()) return file.status();
  FM_RETURN_IF_ERROR(SamePartsPlan(*file, mine));
  return file;
}

Result<PartsPlan> PlanJobParts(const JobSpec& job, const Config& config, int count,
                               const std::string& parts_dir, bool at_most_segments,
                               const UserRights* reader) {
  Result<TakenSource> input = TakeSource(job.input, JobSourceRules(config, reader),
                                         /*frame_times=*/true, job.truncated_input);
  if (!input.ok()) return input.status();
  const VideoStreamInfo& v = input->media.video;
  Result<JobPlan> plan = PlanJob(v.frame_count, v.frame_rate.value(), job.settings);
  if (!plan.ok()) return plan.status();
  if (at_most_segments) count = std::min<int64_t>(count, static_cast<int64_t>(plan->segments.size()));
  Result<PartsPlan> mine = MakePartsPlan(job, *plan, count);
  if (!mine.ok()) return mine.status();
  return WritePartsPlanOnce(parts_dir, *mine);
}

namespace {

// Calls `each(part index from 0, its range, its done-log, the plan's sizes)` for every part.
template <typename Each>
void ForEachPartState(const std::string& parts_dir, const JobSpec& job, const PartsPlan& plan,
                      Each each) {
  // A JobPlan of the plan's sizes names the segments as the parts do.
  Result<JobPlan> sizes = MakePlan(plan.frame_count, plan.chunk_frames, plan.chunks_per_segment);
  if (!sizes.ok()) return;
  const int count = static_cast<int>(plan.parts.size());
  for (int i = 0; i < count; ++i) {
    const PartRange& r = plan.parts[static_cast<size_t>(i)];
    JobState st(PartDir(parts_dir, PartRef{i + 1, count}), job, *sizes, plan.chunks_per_segment,
                r.first_segment, r.end_segment());
    (void)st.Load(/*write_back=*/false);
    each(i, r, st, *sizes);
  }
}

}  // namespace

int64_t PartsFramesDone(const std::string& parts_dir, const JobSpec& job, const PartsPlan& plan) {
  int64_t frames = 0;
  ForEachPartState(parts_dir, job, plan,
                   [&](int, const PartRange& r, const JobState& st, const JobPlan& sizes) {
                     for (int64_t k = 0; k < st.done(); ++k) {
                       frames += sizes.segments[r.first_segment + k].frames;
                     }
                   });
  return frames;
}

std::vector<int> UnfinishedParts(const std::string& parts_dir, const JobSpec& job,
                                 const PartsPlan& plan) {
  std::vector<int> left;
  ForEachPartState(parts_dir, job, plan,
                   [&](int i, const PartRange&, const JobState& st, const JobPlan&) {
                     if (!st.all_done()) left.push_back(i + 1);
                   });
  return left;
}

}  // namespace framemill
