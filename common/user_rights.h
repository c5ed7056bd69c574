// A user's rights over files, decided as the kernel would decide them for that user. The service
// opens what a job names with its own rights, then checks the open file against the submitter's
// (supervisor/spool/submitter.h): a job reaches only what its submitter could reach, and a name
// swapped between an earlier check and the open meets this check on the file actually opened.
// The checks read a file's access ACL where it has one (common/posix_acl.h), else its mode bits.
// Thread-compatible: free functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/posix_acl.h"
#include "common/status.h"

struct stat;

namespace framemill {

struct UserRights {
  uint32_t uid = 0;
  uint32_t gid = 0;              // its primary group
  std::vector<uint32_t> groups;  // every group of the user, its primary group included
  std::string label;             // "uid 1001 (alice)", for messages
};

// The access bits asked of a file (as in its mode: read 4, write 2, search 1).
enum : int { kMayRead = 4, kMayWrite = 2, kMaySearch = 1 };

// Would the kernel grant `user` every bit of `want` to a file with `st` and the access ACL `acl`
// (empty: its mode bits alone)? As the kernel: the owner's bits alone decide for the owner, the
// group's for a member of the file's group. Root is granted everything asked here.
bool UserPermits(const UserRights& user, const std::vector<AclEntry>& acl, const struct stat& st,
                 int want);

// Would the sticky rule stop `user` from replacing an entry with `entry` in a directory with
// `dir`? In a sticky directory only the entry's or the directory's owner (or root) may.
bool StickyForbidsReplace(const UserRights& user, const struct stat& dir, const struct stat& entry);

// kPathNotAllowed unless `user` may search "/" and every directory above `real` (an absolute,
// link-free name), read by name.
Status CheckSearchAbove(const UserRights& user, const std::string& real);

// kPathNotAllowed, naming `what`, the user and the file, unless `user` could open the open file
// `fd` for reading: search on every directory above its real path, read on the file itself.
Status CheckMayReadOpened(const UserRights& user, int fd, const std::string& what);

// kPathNotAllowed unless `user` could create files in the open directory `dir_fd`: search above
// it, write and search on it.
Status CheckMayCreateInOpened(const UserRights& user, int dir_fd, const std::string& what);

// kPathNotAllowed unless `user` could replace the entry `name` of the open directory `dir_fd`
// (ok when there is none): in a sticky directory only the entry's or the directory's owner may.
// Write on the directory is CheckMayCreateInOpened's.
Status CheckMayReplaceAt(const UserRights& user, int dir_fd, const std::string& name,
                         const std::string& what);

}  // namespace framemill
