#include "common/model_card.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/file_util.h"
#include "common/json_fields.h"

namespace framemill {
namespace {

// The card's own format version (STYLE 6): a reader refuses a card of another version.
constexpr int kModelCardVersion = 1;
constexpr int64_t kMaxCardBytes = 1 << 20;
constexpr int64_t kMaxSide = 1 << 20;  // pixels; far above any frame an encoder takes

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string ModelCardPath(const std::string& model_path) { return model_path + ".json"; }

nlohmann::json ModelCardToJson(const ModelCard& card) {
  nlohmann::json j = {
      {"card_version", kModelCardVersion},
      {"name", card.name},
      {"format", card.format},
      {"architecture", card.architecture},
      {"scale", card.scale},
      {"channels", card.channels},
      {"source_channel_order", card.source_channel_order},
      {"source_value_range", card.source_value_range},
      {"receptive_field", card.receptive_field},
      {"min_size", card.min_size},
      {"size_multiple", card.size_multiple},
      {"licence", card.licence},
      {"source", card.source},
      {"sha256", card.sha256},
  };
  if (card.max_size) j["max_size"] = *card.max_size;
  if (card.max_batch) j["max_batch"] = *card.max_batch;
  if (card.device) j["device"] = *card.device;
  if (card.precision) j["precision"] = *card.precision;
  if (card.fixed_width) j["fixed_width"] = *card.fixed_width;
  if (card.fixed_height) j["fixed_height"] = *card.fixed_height;
  if (card.fixed_batch) j["fixed_batch"] = *card.fixed_batch;
  return j;
}

namespace {

// The values' own rules, and how they go together (each failure named by its key).
void CheckCardValues(const ModelCard& card, FieldReader* reader) {
  FieldReader& r = *reader;
  if (card.format != "torchscript" && card.format != "pt2") {
    r.Fail("format", "expected \"torchscript\" or \"pt2\", got \"" + card.format + "\"");
  }
  if (card.source_channel_order != "rgb" && card.source_channel_order != "bgr") {
    r.Fail("source_channel_order", "expected \"rgb\" or \"bgr\"");
  }
  if (card.source_value_range != "0-1" && card.source_value_range != "0-255") {
    r.Fail("source_value_range", "expected \"0-1\" or \"0-255\"");
  }
  if (card.max_size && *card.max_size < card.min_size) {
    r.Fail("max_size", "is below min_size");
  }
  if (card.fixed_width.has_value() != card.fixed_height.has_value()) {
    r.Fail(card.fixed_width ? "fixed_height" : "fixed_width",
           "is missing: a card fixes both sides of the frame or neither");
  } else if (card.fixed_width) {
    const int64_t w = *card.fixed_width, h = *card.fixed_height;
    if (std::min(w, h) < card.min_size || (card.max_size && std::max(w, h) > *card.max_size)) {
      r.Fail("fixed_width", "fixed size " + std::to_string(w) + "x" + std::to_string(h) +
                                " is outside the card's min_size/max_size");
    } else if (w % card.size_multiple != 0 || h % card.size_multiple != 0) {
      r.Fail("fixed_width", "fixed size " + std::to_string(w) + "x" + std::to_string(h) +
                                " is not a multiple of size_multiple");
    }
  }
  if (card.fixed_width && !card.fixed_batch) {
    // A package of one shape fixes its batch too (export-pt2.py --shape sets both); the worker
    // pads short batches only for a fixed batch.
    r.Fail("fixed_batch", "is missing: a card that fixes the frame size fixes the batch too");
  }
  if (card.fixed_batch && card.max_batch && *card.fixed_batch > *card.max_batch) {
    r.Fail("fixed_batch", "is above max_batch");
  }
  if (card.device && *card.device != "cuda" && *card.device != "cpu") {
    r.Fail("device", "expected \"cuda\" or \"cpu\"");
  }
  if (card.precision && *card.precision != "fp32" && *card.precision != "fp16" &&
      *card.precision != "bf16") {
    r.Fail("precision", "expected \"fp32\", \"fp16\" or \"bf16\"");
  }
  if (!card.sha256.empty() && !IsHex64(card.sha256)) {
    r.Fail("sha256", "expected 64 lowercase hex digits");
  }
}

}  // namespace

Result<ModelCard> ModelCardFromJson(const nlohmann::json& j) {
  constexpr StatusCode kCode = StatusCode::kModelInvalid;
  FieldReader r(j, "model card", kCode);
  int64_t version = 0;
  r.Int("card_version", &version, 0, 1000000);
  if (r.status().ok() && version != kModelCardVersion) {
    r.Fail("card_version", "this framemill reads version " + std::to_string(kModelCardVersion) +
                               ", the card is version " + std::to_string(version));
  }
  ModelCard card;
  r.RequiredString("name", &card.name);
  r.RequiredString("format", &card.format);
  r.String("architecture", &card.architecture, true);
  r.Int("scale", &card.scale, 1, 16);
  r.Int("channels", &card.channels, 1, 4);
  r.String("source_channel_order", &card.source_channel_order);
  r.String("source_value_range", &card.source_value_range);
  r.Int("receptive_field", &card.receptive_field, 0, 1 << 16);
  r.Int("min_size", &card.min_size, 1, kMaxSide);
  int64_t max_size = 0;
  if (j.is_object() && j.contains("max_size")) {
    r.Int("max_size", &max_size, 1, kMaxSide);
    card.max_size = max_size;
  }
  r.Int("size_multiple", &card.size_multiple, 1, 1 << 16);
  if (j.is_object() && j.contains("max_batch")) {
    int max_batch = 0;
    r.Int("max_batch", &max_batch, 1, 1 << 16);
    card.max_batch = max_batch;
  }
  for (auto [key, field] : {std::make_pair("fixed_width", &card.fixed_width),
                            std::make_pair("fixed_height", &card.fixed_height)}) {
    if (j.is_object() && j.contains(key)) {
      int64_t side = 0;
      r.Int(key, &side, 1, kMaxSide);
      *field = side;
    }
  }
  if (j.is_object() && j.contains("fixed_batch")) {
    int batch = 0;
    r.Int("fixed_batch", &batch, 1, 1 << 16);
    card.fixed_batch = batch;
  }
  for (auto [key, field] : {std::make_pair("device", &card.device),
                            std::make_pair("precision", &card.precision)}) {
    if (j.is_object() && j.contains(key)) {
      std::string value;
      r.RequiredString(key, &value);
      *field = value;
    }
  }
  r.String("licence", &card.licence, true);
  r.String("source", &card.source, true);
  r.String("sha256", &card.sha256, true);
  if (!r.status().ok()) return r.status();
  CheckCardValues(card, &r);
  Status s = r.Finish();
  if (!s.ok()) return s;
  return card;
}

Result<std::optional<ModelCard>> LoadModelCard(const std::string& model_path,
                                               const std::vector<std::string>& roots,
                                               const UserRights* reader) {
  const std::string path = ModelCardPath(model_path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<ModelCard>();
  Result<UniqueFd> fd = OpenCheckedFile(CheckedKind::kModel, path, roots);
  if (!fd.ok()) {
    return Status(fd.status().code(), "the model card: " + fd.status().message());
  }
  if (reader != nullptr) {
    FM_RETURN_IF_ERROR(CheckMayReadOpened(*reader, fd->get(), "the model card"));
  }
  Result<std::string> text =
      ReadRegularFile(fd->get(), kMaxCardBytes, path, StatusCode::kModelInvalid);
  if (!text.ok()) return text.status();
  Result<nlohmann::json> j = ParseJsonText(*text, path, StatusCode::kModelInvalid);
  if (!j.ok()) return j.status();
  Result<ModelCard> card = ModelCardFromJson(*j);
  if (!card.ok()) return card.status().WithContext(path);
  return std::optional<ModelCard>(std::move(*card));
}

Status SaveModelCard(const std::string& model_path, const ModelCard& card) {
  return AtomicWriteFile(ModelCardPath(model_path), ModelCardToJson(card).dump(2) + "\n");
}

bool HasFixedShape(const ModelCard& card) {
  return card.fixed_width.has_value() || card.fixed_batch.has_value();
}

Status CheckInputFits(const ModelCard& card, int64_t width, int64_t height) {
  const std::string input = "this input is " + std::to_string(width) + "x" + std::to_string(height);
  if (card.fixed_width && (width != *card.fixed_width || height != *card.fixed_height)) {
    return Status(StatusCode::kModelInvalid,
                  "the model " + card.name + " was made for frames of exactly " +
                      std::to_string(*card.fixed_width) + "x" + std::to_string(*card.fixed_height) +
                      " (a package for one size); " + input +
                      ": export it again for this size, or without a fixed size");
  }
  int64_t small = std::min(width, height), large = std::max(width, height);
  if (card.channels != 3) {
    return Status(StatusCode::kModelInvalid,
                  "the model " + card.name + " takes " + std::to_string(card.channels) +
                      " channels; framemill gives models RGB frames (3 channels)");
  }
  if (small < card.min_size) {
    return Status(StatusCode::kModelInvalid,
                  "the model " + card.name + " takes frames of at least " +
                      std::to_string(card.min_size) + " pixels a side; " + input);
  }
  if (card.max_size && large > *card.max_size) {
    return Status(StatusCode::kModelInvalid,
                  "the model " + card.name + " takes frames of at most " +
                      std::to_string(*card.max_size) + " pixels a side; " + input);
  }
  if (width % card.size_multiple != 0 || height % card.size_multiple != 0) {
    return Status(StatusCode::kModelInvalid, "the model " + card.name +
                                                 " takes frames whose sides are multiples of " +
                                                 std::to_string(card.size_multiple) + "; " + input);
  }
  return Status::Ok();
}

}  // namespace framemill
