// SHA-256 (FIPS 180-4) of bytes and of files: the checksum a model card keeps of its model file
// (common/model_card.h). Plain C++, no library: the supervisor links no crypto library and needs
// none elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace framemill {

// Incremental hashing; not thread-safe. Update any number of times, then Finish once.
class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // The digest as 64 lowercase hex digits. The object is spent afterwards.
  std::string FinishHex();

 private:
  void Block(const uint8_t* block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string Sha256Hex(const std::string& bytes);

// The digest of the file at `path` (kIo naming the file when it cannot be read).
Result<std::string> Sha256OfFile(const std::string& path);

}  // namespace framemill
