// The binary half of an ncnn network: the ".bin" weights, the layers' arrays one after another in
// the order of the .param file, each padded to 4 bytes. A "tagged" array (a Convolution's weights)
// starts with a 4-byte storage tag: 0 = float32, 0x01306B47 = float16, 0x01348B83 = bfloat16
// (others are ncnn's int8 and quantized forms, which this reader refuses); an untagged array
// (biases, PReLU slopes) is plain float32. The reader keeps its own offset and checks every read
// against the file's size, so a short file, or bytes the graph does not use, is an error.
#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "common/status.h"

namespace framemill {

class NcnnBinReader {
 public:
  // `bytes`: the whole .bin file (kept by reference: it must outlive the reader); `label` names
  // it in messages.
  NcnnBinReader(const std::string& bytes, std::string label);

  // The next tagged array of `count` values as float32 (converted from its storage). `what`
  // names the array in messages ("line 5 (Convolution Conv_0) weights"). kModelInvalid when
  // the file ends first or the tag is not a float storage.
  Result<torch::Tensor> Tagged(int64_t count, const std::string& what);
  // The next untagged float32 array of `count` values.
  Result<torch::Tensor> Raw(int64_t count, const std::string& what);

  // kModelInvalid when bytes are left after the last array the graph reads.
  Status CheckAllRead() const;

  size_t offset() const { return offset_; }

 private:
  // Copies the next `bytes` bytes (then skips padding to 4) into a new tensor of `count`
  // `dtype` values, converted to float32.
  Result<torch::Tensor> Take(int64_t count, torch::ScalarType dtype, size_t bytes,
                             const std::string& what);

  const std::string& bytes_;
  std::string label_;
  size_t offset_ = 0;
};

}  // namespace framemill
