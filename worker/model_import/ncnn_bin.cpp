#include "worker/model_import/ncnn_bin.h"

#include <cstdio>
#include <cstring>

namespace framemill {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ncnn .bin files are little-endian and are copied as they are");

constexpr uint32_t kTagFloat32 = 0x00000000;
constexpr uint32_t kTagFloat16 = 0x01306B47;
constexpr uint32_t kTagBFloat16 = 0x01348B83;
constexpr uint32_t kTagInt8 = 0x000D4B38;

size_t Align4(size_t n) { return (n + 3) / 4 * 4; }

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

}  // namespace

NcnnBinReader::NcnnBinReader(const std::string& bytes, std::string label)
    : bytes_(bytes), label_(std::move(label)) {}

Result<torch::Tensor> NcnnBinReader::Take(int64_t count, torch::ScalarType dtype, size_t bytes,
                                          const std::string& what) {
  size_t padded = Align4(bytes);
  if (count < 0 || padded > bytes_.size() - offset_) {
    return Status(StatusCode::kModelInvalid,
                  label_ + " is truncated: " + what + ": " + std::to_string(padded) +
                      " bytes needed at offset " + std::to_string(offset_) + ", the file has " +
                      std::to_string(bytes_.size()) + " bytes");
  }
  torch::Tensor t = torch::empty({count}, torch::TensorOptions().dtype(dtype));
  std::memcpy(t.data_ptr(), bytes_.data() + offset_, bytes);
  offset_ += padded;
  return t.to(torch::kFloat32);
}

Result<torch::Tensor> NcnnBinReader::Tagged(int64_t count, const std::string& what) {
  if (bytes_.size() - offset_ < 4) {
    return Status(StatusCode::kModelInvalid, label_ + " is truncated: " + what +
                                                 ": nothing at offset " + std::to_string(offset_) +
                                                 ", the file has " + std::to_string(bytes_.size()) +
                                                 " bytes");
  }
  uint32_t tag = 0;
  std::memcpy(&tag, bytes_.data() + offset_, 4);
  size_t n = static_cast<size_t>(count);
  switch (tag) {
    case kTagFloat32:
      offset_ += 4;
      return Take(count, torch::kFloat32, n * 4, what);
    case kTagFloat16:
      offset_ += 4;
      return Take(count, torch::kFloat16, n * 2, what);
    case kTagBFloat16:
      offset_ += 4;
      return Take(count, torch::kBFloat16, n * 2, what);
    default:
      return Status(StatusCode::kModelInvalid,
                    label_ + ": " + what + " at offset " + std::to_string(offset_) +
                        " have storage tag " + Hex(tag) +
                        (tag == kTagInt8 ? " (int8)" : " (quantized, or not a weight at all)") +
                        "; only float32, float16 and bfloat16 weights are supported");
  }
}

Result<torch::Tensor> NcnnBinReader::Raw(int64_t count, const std::string& what) {
  return Take(count, torch::kFloat32, static_cast<size_t>(count) * 4, what);
}

Status NcnnBinReader::CheckAllRead() const {
  if (offset_ == bytes_.size()) return Status::Ok();
  return Status(StatusCode::kModelInvalid,
                label_ + " has " + std::to_string(bytes_.size() - offset_) +
                    " bytes after the last weight the graph reads (it reads " +
                    std::to_string(offset_) + " of " + std::to_string(bytes_.size()) +
                    "): the .bin does not belong to this .param");
}

}  // namespace framemill
