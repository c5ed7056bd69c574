#include "supervisor/cluster/parts_options.h"

#include "supervisor/job/parts_dir.h"
#include "supervisor/plan/part_plan.h"

namespace framemill {

Status SetPartOptions(const std::string& job_path, const std::string& part, JobOptions* options) {
  Result<PartRef> ref = ParsePartRef(part);
  if (!ref.ok()) return ref.status();
  options->part = *ref;
  options->parts_dir = PartsDirFor(job_path);
  options->workspace = PartDir(options->parts_dir, *ref);
  options->timeline = options->workspace + "/timeline.jsonl";
  // One report per output, by the stitch's run... which starts no workers: parts write none.
  options->write_report = false;
  return Status::Ok();
}

}  // namespace framemill
