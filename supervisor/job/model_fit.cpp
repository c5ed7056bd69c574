#include "supervisor/job/model_fit.h"

#include "common/checked_file.h"
#include "common/mutex.h"
#include "common/sha256.h"
#include <sys/stat.h>
#include <cstring>
#include <cerrno>
#include <tuple>
#include <map>

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

Status CheckModelDigest(const ModelCard& card, int model_fd, const std::string& model_path) {
  if (card.sha256.empty()) return Status::Ok();
  struct stat st {};
  if (::fstat(model_fd, &st) != 0) {
    return Status(StatusCode::kModelInvalid, model_path + ": " + std::strerror(errno));
  }
  // (device, inode, size, mtime) -> digest: the service hashes a model once, not every job.
  struct Digests {
    Mutex mu;
    std::map<std::tuple<dev_t, ino_t, off_t, int64_t, int64_t>, std::string> known GUARDED_BY(mu);
  };
  static Digests digests;
  const auto key = std::make_tuple(st.st_dev, st.st_ino, st.st_size,
                                   static_cast<int64_t>(st.st_mtim.tv_sec),
                                   static_cast<int64_t>(st.st_mtim.tv_nsec));
  std::string digest;
  {
    MutexLock lock(&digests.mu);
    if (auto it = digests.known.find(key); it != digests.known.end()) digest = it->second;
  }
  if (digest.empty()) {
    Result<std::string> hashed = Sha256OfFile(FdPath(model_fd));
    if (!hashed.ok()) return Status(StatusCode::kModelInvalid, hashed.status().message());
    digest = *hashed;
    MutexLock lock(&digests.mu);
    digests.known[key] = digest;
  }
  if (digest == card.sha256) return Status::Ok();
  return Status(StatusCode::kModelInvalid,
                model_path + ": the model file is not the one its card describes (sha256 " +
                    digest + ", the card says " + card.sha256 +
                    "); import the model again or remove the card's sha256");
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
