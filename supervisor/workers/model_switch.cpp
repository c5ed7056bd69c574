#include "supervisor/workers/model_switch.h"

#include <utility>

#include "common/log.h"

namespace framemill {

void ModelSwitch::Offer(ModelOffer offer) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(offer);
}

bool ModelSwitch::TakeInto(WorkerPool* pool) {
  std::optional<ModelOffer> offer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offer = std::move(pending_);
    pending_.reset();
  }
  if (!offer || dropped_) return false;
  Status s = pool->SwitchModel(offer->model.get(), offer->label, offer->probe_width,
                               offer->probe_height, offer->probe_batch);
  if (!s.ok()) {
    spdlog::warn("{} not taken: {}", offer->label, s.message());
    return false;
  }
  label_ = offer->label;
  moving_ = true;
  spdlog::info("the workers move to {}, each at its next chunk boundary", label_);
  return true;
}

void ModelSwitch::Drop(WorkerPool* pool, const std::string& why) {
  if (dropped_) return;
  spdlog::warn("{} dropped: {}; the job goes on with its model", label_, why);
  pool->RevertModel();
  moving_ = false;
  dropped_ = true;
}

}  // namespace framemill
