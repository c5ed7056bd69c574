#include "common/posix_acl.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/xattr.h>

namespace framemill {
namespace {

constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 4, kEntryBytes = 8;
constexpr size_t kMaxEntries = 4096;  // far beyond what a file system keeps

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

}  // namespace

std::string EncodeAcl(const std::vector<AclEntry>& entries) {
  std::string out;
  PutLe(&out, kVersion, 4);
  for (const AclEntry& e : entries) {
    PutLe(&out, static_cast<uint16_t>(e.tag), 2);
    PutLe(&out, e.perm, 2);
    PutLe(&out, e.id, 4);
  }
  return out;
}

Result<std::vector<AclEntry>> DecodeAcl(const std::string& bytes) {
  if (bytes.size() < kHeaderBytes || (bytes.size() - kHeaderBytes) % kEntryBytes != 0 ||
      (bytes.size() - kHeaderBytes) / kEntryBytes > kMaxEntries ||
      GetLe(bytes, 0, 4) != kVersion) {
    return Status(StatusCode::kInternal, "an access ACL of " + std::to_string(bytes.size()) +
                                             " bytes that is not version 2");
  }
  std::vector<AclEntry> entries;
  for (size_t at = kHeaderBytes; at < bytes.size(); at += kEntryBytes) {
    AclEntry e;
    e.tag = static_cast<AclTag>(GetLe(bytes, at, 2));
    e.perm = static_cast<uint16_t>(GetLe(bytes, at + 2, 2) & 7);
    e.id = static_cast<uint32_t>(GetLe(bytes, at + 4, 4));
    entries.push_back(e);
  }
  return entries;
}

namespace {

// The attribute read by `get` (lgetxattr or fgetxattr, its buffer and size), decoded; `name` for
// messages.
template <typename Get>
Result<std::vector<AclEntry>> ReadAcl(const std::string& name, Get get) {
  std::string bytes(kHeaderBytes + 32 * kEntryBytes, '\0');
  for (;;) {
    const ssize_t n = get(bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.resize(static_cast<size_t>(n));
      return DecodeAcl(bytes);
    }
    if (errno == ENODATA || errno == ENOTSUP) return std::vector<AclEntry>();
    if (errno != ERANGE || bytes.size() > kHeaderBytes + kMaxEntries * kEntryBytes) {
      return Status(StatusCode::kIo, name + ": its ACL: " + std::strerror(errno));
    }
    bytes.resize(bytes.size() * 2);
  }
}

}  // namespace

Result<std::vector<AclEntry>> ReadAccessAcl(const std::string& path) {
  return ReadAcl(path, [&](char* buf, size_t size) {
    return ::lgetxattr(path.c_str(), "system.posix_acl_access", buf, size);
  });
}

Result<std::vector<AclEntry>> ReadAccessAclOf(int fd, const std::string& name) {
  return ReadAcl(name, [&](char* buf, size_t size) {
    return ::fgetxattr(fd, "system.posix_acl_access", buf, size);
  });
}

bool AclPermits(const std::vector<AclEntry>& acl, uint32_t owner_uid, uint32_t owner_gid,
                uint32_t uid, const std::vector<uint32_t>& groups, int want) {
  auto find = [&](AclTag tag) {
    return std::find_if(acl.begin(), acl.end(), [tag](const AclEntry& e) { return e.tag == tag; });
  };
  auto holds = [want](uint16_t perm) { return (perm & want) == want; };
  const auto mask = find(AclTag::kMask);
  auto masked = [&](uint16_t perm) {
    return mask == acl.end() ? perm : static_cast<uint16_t>(perm & mask->perm);
  };
  if (uid == owner_uid) {
    const auto e = find(AclTag::kUserObj);
    return e != acl.end() && holds(e->perm);
  }
  for (const AclEntry& e : acl) {
    if (e.tag == AclTag::kUser && e.id == uid) return holds(masked(e.perm));
  }
  auto member = [&](uint32_t gid) {
    return std::find(groups.begin(), groups.end(), gid) != groups.end();
  };
  bool group_matched = false;
  for (const AclEntry& e : acl) {
    const bool matches = (e.tag == AclTag::kGroupObj && member(owner_gid)) ||
                         (e.tag == AclTag::kGroup && member(e.id));
    if (!matches) continue;
    group_matched = true;
    if (holds(masked(e.perm))) return true;
  }
  if (group_matched) return false;
  const auto other = find(AclTag::kOther);
  return other != acl.end() && holds(other->perm);
}

}  // namespace framemill
