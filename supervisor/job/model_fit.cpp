#include "supervisor/job/model_fit.h"

#include <optional>

#include "common/model_card.h"

namespace framemill {

Status CheckModelFitsJob(const std::string& model_path, const JobSettings& settings,
                         int64_t width, int64_t height) {
  Result<std::optional<ModelCard>> card = LoadModelCard(model_path);
  if (!card.ok()) return card.status();
  if (!card->has_value()) return Status::Ok();
  const ModelCard& c = **card;
  Status fits = CheckInputFits(c, width, height);
  if (!fits.ok()) return Status(StatusCode::kModelInvalid, model_path + ": " + fits.message());
  if (c.device && *c.device == "cuda" && settings.device.kind == DeviceKind::kCpu) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": made for cuda (its card says so); this job's device is cpu");
  }
  if (c.device && *c.device == "cpu" && settings.device.kind == DeviceKind::kCuda) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": made for cpu (its card says so); this job's device is " +
                      Name(settings.device));
  }
  if (c.precision && *c.precision != Name(settings.precision)) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": made for precision " + *c.precision +
                      " (its card says so); this job's precision is " +
                      Name(settings.precision));
  }
  if (c.max_batch && settings.batch > *c.max_batch) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": takes batches of at most " + std::to_string(*c.max_batch) +
                      " (its card says so); this job's batch is " +
                      std::to_string(settings.batch));
  }
  return Status::Ok();
}

}  // namespace framemill
