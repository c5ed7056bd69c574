#include "supervisor/workers/spare_offer.h"

#include "common/log.h"

namespace framemill {

bool SpareOffer::TakeInto(WorkerPool* pool, int k, int gpu) {
  for (WorkerPool* spares : spares_) {
    Status taken = pool->Adopt(k, gpu, spares);
    if (taken.ok()) {
      if (on_taken_) on_taken_(spares);
      return true;
    }
    if (taken.code() != StatusCode::kWorkerFailed) {
      spdlog::warn("worker {}: a spare could not be taken ({}); starting one", k, taken.message());
    }
  }
  return false;
}

}  // namespace framemill
