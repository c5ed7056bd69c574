// POSIX access ACLs as Linux stores them (the system.posix_acl_access extended attribute,
// linux/posix_acl_xattr.h): read, written and decided the way the kernel decides, without libacl.
// Thread-compatible: free functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

enum class AclTag : uint16_t {
  kUserObj = 0x01,   // the file's owner
  kUser = 0x02,      // a named user (id)
  kGroupObj = 0x04,  // the file's group
  kGroup = 0x08,     // a named group (id)
  kMask = 0x10,      // the most a named entry or the group class may grant
  kOther = 0x20,
};

struct AclEntry {
  AclTag tag = AclTag::kOther;
  uint16_t perm = 0;  // 4 read, 2 write, 1 execute (search)
  uint32_t id = 0xffffffffu;  // a uid or gid for kUser and kGroup, else undefined
};

// The attribute's bytes for `entries` (version 2, little-endian, in the order given: the kernel
// wants them sorted by tag, then id).
std::string EncodeAcl(const std::vector<AclEntry>& entries);

// The entries of an attribute's bytes; kInternal for a wrong version or length.
Result<std::vector<AclEntry>> DecodeAcl(const std::string& bytes);

// The access ACL of `path` (not followed if it is a link): empty when it has none (only its mode
// bits then count, or the file system keeps no ACLs).
Result<std::vector<AclEntry>> ReadAccessAcl(const std::string& path);
// The same of the open file `fd` (`name` for messages).
Result<std::vector<AclEntry>> ReadAccessAclOf(int fd, const std::string& name);

// Would a process of `uid` with `groups` be granted every bit of `want` (4 read, 2 write, 1
// search) by `acl` on a file owned by `owner_uid` and `owner_gid`? The kernel's order (acl(5)):
// the owner's entry for the owner, a named user's entry (under the mask), any group entry of the
// process's groups that holds `want` (under the mask), else the other entry. Root is not special
// here.
bool AclPermits(const std::vector<AclEntry>& acl, uint32_t owner_uid, uint32_t owner_gid,
                uint32_t uid, const std::vector<uint32_t>& groups, int want);

}  // namespace framemill
