// POSIX access ACLs (common/posix_acl.h) and the submitter checks that obey them
// (supervisor/spool/submitter.h): an entry that denies a user is obeyed though the mode bits would
// let the user in, one that grants more than the mode bits too.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <vector>

#include "common/posix_acl.h"
#include "skip.h"
#include "supervisor/spool/submitter.h"

using namespace framemill;

namespace {

constexpr uint32_t kOwner = 1000, kGroup = 1000, kEve = 23456, kTeam = 777;

// owner rw-, named user eve ---, group r--, named group team rw-, mask r--, other r--.
std::vector<AclEntry> Sample() {
  return {{AclTag::kUserObj, 6},    {AclTag::kUser, 0, kEve},     {AclTag::kGroupObj, 4},
          {AclTag::kGroup, 6, kTeam}, {AclTag::kMask, 4},         {AclTag::kOther, 4}};
}

}  // namespace

TEST_CASE("posix acl: the attribute's bytes round-trip, and a damaged one is refused") {
  Result<std::vector<AclEntry>> back = DecodeAcl(EncodeAcl(Sample()));
  REQUIRE(back.ok());
  REQUIRE(back->size() == Sample().size());
  for (size_t i = 0; i < back->size(); ++i) {
    CHECK((*back)[i].tag == Sample()[i].tag);
    CHECK((*back)[i].perm == Sample()[i].perm);
    CHECK((*back)[i].id == Sample()[i].id);
  }
  CHECK(EncodeAcl(Sample()).size() == 4 + 8 * Sample().size());
  CHECK_FALSE(DecodeAcl("").ok());
  CHECK_FALSE(DecodeAcl(EncodeAcl(Sample()).substr(0, 11)).ok());
  std::string v1 = EncodeAcl(Sample());
  v1[0] = 1;
  CHECK_FALSE(DecodeAcl(v1).ok());
}

TEST_CASE("posix acl: decided in the kernel's order: owner, named user, groups, other") {
  const std::vector<AclEntry> acl = Sample();
  auto permits = [&](uint32_t uid, std::vector<uint32_t> groups, int want) {
    return AclPermits(acl, kOwner, kGroup, uid, groups, want);
  };
  CHECK(permits(kOwner, {kGroup}, 6));                // the owner's entry
  CHECK_FALSE(permits(kEve, {kEve}, 4));              // named: none, though other may read
  CHECK_FALSE(permits(kEve, {kEve, kGroup}, 4));      // the named entry wins over the group's
  CHECK(permits(3000, {kTeam}, 4));                   // a named group, under the mask
  CHECK_FALSE(permits(3000, {kTeam}, 2));             // its write is masked away
  CHECK(permits(3000, {kGroup}, 4));                  // the owning group
  CHECK(permits(3000, {3000}, 4));                    // other
  CHECK_FALSE(permits(3000, {3000}, 2));
  // A group entry that matches but lacks the bit denies, even where other has it.
  const std::vector<AclEntry> strict = {{AclTag::kUserObj, 6}, {AclTag::kGroupObj, 0},
                                        {AclTag::kMask, 7},    {AclTag::kOther, 4}};
  CHECK_FALSE(AclPermits(strict, kOwner, kGroup, 3000, {kGroup}, 4));
  CHECK(AclPermits(strict, kOwner, kGroup, 3000, {3000}, 4));
  // A named user granted more than the mode bits would give.
  const std::vector<AclEntry> grant = {{AclTag::kUserObj, 6}, {AclTag::kUser, 4, kEve},
                                       {AclTag::kGroupObj, 0}, {AclTag::kMask, 4},
                                       {AclTag::kOther, 0}};
  CHECK(AclPermits(grant, kOwner, kGroup, kEve, {kEve}, 4));
  CHECK_FALSE(AclPermits(grant, kOwner, kGroup, 3000, {3000}, 4));
}

TEST_CASE("posix acl: a submitter an ACL entry denies may not name the file, another user may") {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/framemill-acl-" +
                          std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  const std::string file = dir + "/clip.mp4";
  std::ofstream(file) << "frames";
  ::chmod(file.c_str(), 0644);
  // Mode bits: everyone may read. The ACL: eve may not.
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  const std::string acl = EncodeAcl({{AclTag::kUserObj, 6},
                                     {AclTag::kUser, 0, kEve},
                                     {AclTag::kGroupObj, 4},
                                     {AclTag::kMask, 4},
                                     {AclTag::kOther, 4}});
  if (::setxattr(file.c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0) != 0) {
    std::filesystem::remove_all(dir);
    unit::SkipTest("this file system keeps no POSIX ACLs (" + dir + ")");
  }
  Result<std::vector<AclEntry>> read = ReadAccessAcl(file);
  REQUIRE(read.ok());
  CHECK(read->size() == 5);
  Submitter eve;
  eve.uid = kEve;
  eve.gid = kEve;
  eve.groups = {kEve};
  Status refused = CheckMayRead(eve, file, "input");
  CHECK(refused.code() == StatusCode::kPathNotAllowed);
  CHECK(refused.message().find("may not read " + file) != std::string::npos);
  Submitter other = eve;
  other.uid = other.gid = 23457;
  other.groups = {23457};
  CHECK(CheckMayRead(other, file, "input").ok());
  // No ACL: the mode bits decide, and let eve in.
  REQUIRE(::removexattr(file.c_str(), "system.posix_acl_access") == 0);
  CHECK(CheckMayRead(eve, file, "input").ok());
  std::filesystem::remove_all(dir);
}
