// libFuzzer target: the files a submitter names that the supervisor parses itself, and the face
// detector's replies (the detector runs confined, but what it sends back is hostile too). The
// first byte picks the parser; the rest is the file or the reply:
//   0 a model card (<model>.json): the JSON text, ModelCardFromJson, then the fit checks;
//   1 a face table (`face_table`): ReadFaceTable on the bytes as a file, then CheckFaceTable;
//   2 a detector's face record and its picture's size: FromRecord.
// Any crash, sanitizer report, uncaught exception or broken contract is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/face_detection.h"
#include "common/json_fields.h"
#include "common/model_card.h"
#include "supervisor/faces/face_table.h"
#include "tests/fuzz/fuzz_checks.h"

namespace framemill {
namespace {

void FuzzCard(const std::string& text) {
  Result<nlohmann::json> json = ParseJsonText(text, "m.pt.json", StatusCode::kModelInvalid);
  if (!json.ok()) {
    fuzz::CheckError(json.status(), StatusCode::kModelInvalid);
    return;
  }
  Result<ModelCard> card = ModelCardFromJson(*json);
  if (!card.ok()) {
    fuzz::Check(!card.status().message().empty(), "a card error has an empty message");
    fuzz::CheckDumps({{"reason", card.status().ToString()}});
    return;
  }
  // A card that parsed writes and reads back as itself, and answers any frame size.
  Result<ModelCard> back = ModelCardFromJson(ModelCardToJson(*card));
  fuzz::Check(back.ok(), "a card that parsed does not parse back");
  fuzz::Check(ModelCardToJson(*back) == ModelCardToJson(*card), "a card does not round-trip");
  fuzz::CheckDumps(ModelCardToJson(*card));
  for (int64_t side : {int64_t{1}, int64_t{64}, int64_t{1920}, int64_t{1} << 40}) {
    Status fits = CheckInputFits(*card, side, side / 2 + 1);
    if (!fits.ok()) fuzz::CheckError(fits, StatusCode::kModelInvalid);
  }
  (void)HasFixedShape(*card);
}

void FuzzFaceTable(const std::string& bytes) {
  UniqueFd fd(::memfd_create("face-table", MFD_CLOEXEC));
  fuzz::Check(fd.valid(), "memfd_create failed");
  fuzz::Check(::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()),
              "write failed");
  Result<FaceTable> table = ReadFaceTable(FdPath(fd.get()));
  if (!table.ok()) {
    fuzz::Check(table.status().code() == StatusCode::kInputInvalid ||
                    table.status().code() == StatusCode::kInputMissing,
                "a face table error has the wrong StatusCode");
    fuzz::CheckDumps({{"reason", table.status().ToString()}});
    return;
  }
  fuzz::Check(table->width > 0 && table->height > 0 && table->face_size > 0,
              "a face table's sizes are not positive");
  for (const std::vector<FaceWarp>& frame : table->frames) {
    fuzz::Check(frame.size() <= kMaxFacesPerFrame, "a frame holds too many faces");
  }
  FaceTableNeed need{table->width, table->height, table->face_size, table->video_frames,
                     table->first_frame, static_cast<int64_t>(table->frames.size())};
  fuzz::Check(CheckFaceTable(*table, need, "t").ok(), "a table does not fit its own sizes");
  table->CountFaces();
  fuzz::CheckDumps(ToJson(table->stats));
}

void FuzzFaceRecord(const std::string& bytes) {
  FaceRecord record;
  uint32_t size[2] = {0, 0};
  if (bytes.size() < sizeof record + sizeof size) return;
  std::memcpy(&record, bytes.data(), sizeof record);
  std::memcpy(size, bytes.data() + sizeof record, sizeof size);
  Result<Face> face = FromRecord(record, size[0], size[1]);
  if (!face.ok()) {
    fuzz::CheckError(face.status(), StatusCode::kModelInvalid);
    return;
  }
  // What FromRecord lets through is finite and near the picture (within a picture of it).
  const FaceRecord back = ToRecord(*face);
  const float w = static_cast<float>(size[0]), h = static_cast<float>(size[1]);
  fuzz::Check(std::isfinite(back.score) && back.score >= 0 && back.score <= 1, "score");
  fuzz::Check(back.width >= 0 && back.height >= 0, "a negative size");
  auto near = [](float v, float limit) { return std::isfinite(v) && v >= -limit && v <= 2 * limit; };
  bool ok = near(back.x, w) && near(back.y, h) && near(back.width, w) && near(back.height, h);
  for (int k = 0; k < kFaceKeypoints; ++k) {
    ok = ok && near(back.keypoints[2 * k], w) && near(back.keypoints[2 * k + 1], h);
  }
  fuzz::Check(ok, "a value beyond a picture of the picture");
}

}  // namespace
}  // namespace framemill

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      framemill::FuzzCard(rest);
      break;
    case 1:
      framemill::FuzzFaceTable(rest);
      break;
    default:
      framemill::FuzzFaceRecord(rest);
      break;
  }
  return 0;
}
