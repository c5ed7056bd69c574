#include "common/model_format.h"

#include <cstdint>
#include <cstring>

#include "common/file_util.h"

namespace framemill {

const char* Name(ModelFormat format) {
  switch (format) {
    case ModelFormat::kTorchScript:
      return "torchscript";
    case ModelFormat::kPt2:
      return "pt2";
  }
  return "?";
}

namespace {

// Little-endian reads that fail (nullopt-like false) past the end of `b`.
bool Read16(const std::string& b, uint64_t at, uint64_t* v) {
  if (at + 2 > b.size()) return false;
  *v = static_cast<uint8_t>(b[at]) | static_cast<uint64_t>(static_cast<uint8_t>(b[at + 1])) << 8;
  return true;
}
bool Read32(const std::string& b, uint64_t at, uint64_t* v) {
  uint64_t lo = 0, hi = 0;
  if (!Read16(b, at, &lo) || !Read16(b, at + 2, &hi)) return false;
  *v = lo | hi << 16;
  return true;
}
bool Read64(const std::string& b, uint64_t at, uint64_t* v) {
  uint64_t lo = 0, hi = 0;
  if (!Read32(b, at, &lo) || !Read32(b, at + 4, &hi)) return false;
  *v = lo | hi << 32;
  return true;
}

constexpr uint64_t kEndOfDirectory = 0x06054b50;
constexpr uint64_t kZip64Locator = 0x07064b50;
constexpr uint64_t kZip64End = 0x06064b50;
constexpr uint64_t kDirectoryEntry = 0x02014b50;
constexpr uint64_t kLocalHeader = 0x04034b50;

struct Directory {
  uint64_t offset = 0;
  uint64_t entries = 0;
};

// The central directory, from the end-of-directory record (zip64 where it says so). False when
// `b` is not a zip archive.
bool FindDirectory(const std::string& b, Directory* d) {
  if (b.size() < 22) return false;
  // The record is 22 bytes plus a comment of at most 65535.
  uint64_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (uint64_t at = b.size() - 22;; --at) {
    uint64_t sig = 0;
    if (Read32(b, at, &sig) && sig == kEndOfDirectory) {
      uint64_t entries = 0, offset = 0;
      Read16(b, at + 10, &entries);
      Read32(b, at + 16, &offset);
      if (offset == 0xffffffffu || entries == 0xffffu) {
        uint64_t loc_sig = 0, end64 = 0, end_sig = 0;
        if (at < 20 || !Read32(b, at - 20, &loc_sig) || loc_sig != kZip64Locator ||
            !Read64(b, at - 20 + 8, &end64) || !Read32(b, end64, &end_sig) ||
            end_sig != kZip64End || !Read64(b, end64 + 32, &entries) ||
            !Read64(b, end64 + 48, &offset)) {
          return false;
        }
      }
      d->offset = offset;
      d->entries = entries;
      return true;
    }
    if (at == lowest) return false;
  }
}

// The stored (uncompressed) content of the entry whose local header is at `local`, at most
// `limit` bytes; empty when it is compressed or out of bounds.
std::string StoredContent(const std::string& b, uint64_t local, uint64_t size, uint64_t limit) {
  uint64_t sig = 0, method = 0, name_len = 0, extra_len = 0;
  if (!Read32(b, local, &sig) || sig != kLocalHeader || !Read16(b, local + 8, &method) ||
      method != 0 || !Read16(b, local + 26, &name_len) || !Read16(b, local + 28, &extra_len)) {
    return "";
  }
  uint64_t data = local + 30 + name_len + extra_len;
  uint64_t n = size < limit ? size : limit;
  if (data + n > b.size()) return "";
  return b.substr(data, n);
}

}  // namespace

Result<ModelFormat> DetectModelFormat(const std::string& b) {
  Directory dir;
  if (!FindDirectory(b, &dir)) {
    return Status(StatusCode::kModelInvalid,
                  "not a model file: not a zip archive (a TorchScript file or a .pt2 package is "
                  "one)");
  }
  bool pickle = false, code = false;
  uint64_t at = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    uint64_t sig = 0, csize = 0, name_len = 0, extra_len = 0, comment_len = 0, local = 0;
    if (!Read32(b, at, &sig) || sig != kDirectoryEntry || !Read32(b, at + 20, &csize) ||
        !Read16(b, at + 28, &name_len) || !Read16(b, at + 30, &extra_len) ||
        !Read16(b, at + 32, &comment_len) || !Read32(b, at + 42, &local) ||
        at + 46 + name_len > b.size()) {
      return Status(StatusCode::kModelInvalid, "not a model file: a damaged zip directory");
    }
    const std::string name = b.substr(at + 46, name_len);
    if (name == "archive_format" || EndsWith(name, "/archive_format")) {
      if (StoredContent(b, local, csize, 16).rfind("pt2", 0) == 0) return ModelFormat::kPt2;
    }
    pickle = pickle || EndsWith(name, "/data.pkl");
    code = code || name.find("/code/") != std::string::npos;
    at += 46 + name_len + extra_len + comment_len;
  }
  if (pickle && code) return ModelFormat::kTorchScript;
  return Status(StatusCode::kModelInvalid,
                "not a model file: a zip archive that is neither TorchScript (data.pkl and "
                "code/) nor a .pt2 package (archive_format \"pt2\")");
}

}  // namespace framemill
