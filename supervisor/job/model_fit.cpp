#include "supervisor/job/model_fit.h"

#include <optional>

#include "common/shm_protocol.h"

namespace framemill {

Status CheckModelFitsJob(const std::optional<ModelCard>& card, const std::string& model_path,
                         const JobSettings& settings, int64_t width, int64_t height) {
  if (!card.has_value()) return Status::Ok();
  const ModelCard& c = *card;
  if (HasFixedShape(c) && settings.mode == JobMode::kFaces) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": a package made for one shape (its card fixes " +
                      (c.fixed_width ? "the frame size" : "the batch") +
                      "); face mode runs face_size crops in batches of a frame's faces: export "
                      "it without --shape and --batch");
  }
  if (HasFixedShape(c) && settings.tile.mode != TileMode::kOff) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": a package made for one shape (its card fixes " +
                      (c.fixed_width ? "the frame size" : "the batch") +
                      ") runs whole frames only; this job's tile is \"" + Name(settings.tile) +
                      "\"");
  }
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
  if (c.fixed_batch && settings.batch != *c.fixed_batch) {
    return Status(StatusCode::kModelInvalid,
                  model_path + ": made for batches of exactly " + std::to_string(*c.fixed_batch) +
                      " (its card says so); this job's batch is " +
                      std::to_string(settings.batch) + ": set \"batch\": " +
                      std::to_string(*c.fixed_batch));
  }
  return Status::Ok();
}

ProbeShape ProbeShapeFor(const std::optional<ModelCard>& card, const JobSettings& settings) {
  ProbeShape p;
  if (settings.mode == JobMode::kFaces) {
    p.width = p.height = static_cast<uint32_t>(settings.faces.size);
    return p;
  }
  p.width = p.height = kProbeSize;
  if (card && card->fixed_width) {
    p.width = static_cast<uint32_t>(*card->fixed_width);
    p.height = static_cast<uint32_t>(*card->fixed_height);
  }
  if (card && card->fixed_batch) p.batch = static_cast<uint32_t>(*card->fixed_batch);
  return p;
}

}  // namespace framemill
