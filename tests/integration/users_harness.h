// Other local users for the tests that play one user against another: made-up uids (no account
// needed) run through setpriv, and files and folders of theirs. The tests run as root.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "common/posix_acl.h"
#include "harness.h"

namespace framemill::test {

inline constexpr int kUserA = 4242;
inline constexpr int kUserB = 4343;

// The command prefix that runs a command as `uid` (its own group, no other).
inline std::string As(int uid) {
  return "setpriv --reuid=" + std::to_string(uid) + " --regid=" + std::to_string(uid) +
         " --clear-groups";
}

// Skips the calling test where it is not root or setpriv cannot change the uid.
inline void RequireMultiUser() {
  if (::geteuid() != 0) SkipTest("the multi-user tests need root (to become made-up uids)");
  if (Shell(As(kUserA) + " true").exit_code != 0) SkipTest("setpriv cannot change uid here");
}

// A directory owned by `uid` with `mode`.
inline std::string OwnedDir(const std::string& path, int uid, mode_t mode) {
  std::filesystem::create_directories(path);
  REQUIRE(::chown(path.c_str(), uid, uid) == 0);
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

inline void OwnedFile(const std::string& path, int uid, mode_t mode, const std::string& content) {
  std::ofstream(path) << content;
  REQUIRE(::chown(path.c_str(), uid, uid) == 0);
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

// Gives `path` an access ACL that lets everyone read it but `uid` (owner rw-, user:uid:---,
// group r--, mask r--, other r--). false where the file system keeps no POSIX ACLs.
inline bool DenyReadTo(const std::string& path, int uid) {
  const std::string acl =
      framemill::EncodeAcl({{framemill::AclTag::kUserObj, 6},
                            {framemill::AclTag::kUser, 0, static_cast<uint32_t>(uid)},
                            {framemill::AclTag::kGroupObj, 4},
                            {framemill::AclTag::kMask, 4},
                            {framemill::AclTag::kOther, 4}});
  return ::setxattr(path.c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0) == 0;
}

}  // namespace framemill::test
