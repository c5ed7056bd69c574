#include "supervisor/service/gpu_scheduler.h"

#include <algorithm>

namespace framemill {
namespace {

bool AllFree(const std::vector<int>& gpus, const std::set<int>& free) {
  return std::all_of(gpus.begin(), gpus.end(), [&](int g) { return free.count(g) != 0; });
}

}  // namespace

std::string GpuListText(const std::vector<int>& gpus) {
  std::string s;
  for (int g : gpus) s += (s.empty() ? "" : ", ") + std::to_string(g);
  return "[" + s + "]";
}

Status CheckGpuAsk(const std::vector<int>& owned, const GpuAsk& ask) {
  std::set<int> seen;
  for (int g : ask.gpus) {
    if (std::find(owned.begin(), owned.end(), g) == owned.end()) {
      return Status(StatusCode::kInvalidJob, "gpus: GPU " + std::to_string(g) +
                                                 " is not one of the service's GPUs " +
                                                 GpuListText(owned) + " (config service_gpus)");
    }
    if (!seen.insert(g).second) {
      return Status(StatusCode::kInvalidJob, "gpus: GPU " + std::to_string(g) + " named twice");
    }
  }
  return Status::Ok();
}

std::vector<int> ChooseGpus(const std::set<int>& free, const GpuAsk& ask, int waiting,
                            const std::vector<WarmPlace>& warm) {
  if (!ask.gpus.empty()) {
    if (!AllFree(ask.gpus, free)) return {};
    std::vector<int> mine = ask.gpus;
    std::sort(mine.begin(), mine.end());
    return mine;
  }
  if (free.empty()) return {};
  const size_t share =
      std::max<size_t>(1, free.size() / static_cast<size_t>(std::max(1, waiting)));
  // Idle workers of this model on exactly a share of free GPUs: no load, no start.
  for (const WarmPlace& w : warm) {
    if (w.model == ask.model && w.gpus.size() == share && AllFree(w.gpus, free)) {
      std::vector<int> mine = w.gpus;
      std::sort(mine.begin(), mine.end());
      return mine;
    }
  }
  std::set<int> warm_gpus;
  for (const WarmPlace& w : warm) warm_gpus.insert(w.gpus.begin(), w.gpus.end());
  std::vector<int> mine;
  for (int pass = 0; pass < 2 && mine.size() < share; ++pass) {
    for (int g : free) {  // ascending
      if (mine.size() == share) break;
      const bool has_warm = warm_gpus.count(g) != 0;
      if ((pass == 0) == has_warm) continue;  // first the GPUs no warm pool holds
      mine.push_back(g);
    }
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace framemill
