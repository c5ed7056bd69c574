// Who submitted a spool job, and what that user may ask the service to do.
//
// The service runs as its own user and can read and write more than any one submitter; these
// checks keep it from doing for a submitter what the submitter could not do alone. A submitter
// is the owner of the job file (read with fstat on the file opened with O_NOFOLLOW), with the
// groups the user database gives that uid (getpwuid_r, getgrouplist). A uid with no entry there
// (a container, a made-up test uid) has one group: the job file's group.
//
// The permission checks read the access ACL where a file has one, else its mode bits, the way the
// kernel would decide for that user (common/posix_acl.h): an ACL entry that denies the user is
// obeyed, one that grants more than the mode bits too. The checks here are on names, so that a
// job is refused before it starts; the job runner checks the same rights again on each file as
// it opens it (JobOptions::submitter), which is the check that counts.
// Thread-compatible: free functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/user_rights.h"

namespace framemill {

struct Submitter {
  uint32_t uid = 0;
  uint32_t gid = 0;              // the primary group (or the job file's group)
  std::string user;              // the user's name, or "" when the uid has no entry
  std::vector<uint32_t> groups;  // every group the user is in, gid included

  // {"uid", "gid", "user"}: what owner.json and result.json's "submitter" hold.
  nlohmann::json ToJson() const;
  // The user's rights, as the checks on open files take them (common/user_rights.h).
  UserRights rights() const;
};

// The submitter for `uid`, with the groups from the user database (`file_gid` alone when the
// uid has none).
Submitter LookupSubmitter(uint32_t uid, uint32_t file_gid);

// A submitter recorded by ToJson(), with its groups looked up again.
Result<Submitter> SubmitterFromJson(const nlohmann::json& j);

// Root, the service's own user, or a member of `admin_group` ("" = no group): may cancel or
// retry any job.
bool IsAdmin(const Submitter& who, const std::string& admin_group);

// May `who` act on a job that `owner` submitted (its own job, or an admin)?
bool MayControl(const Submitter& who, const Submitter& owner, const std::string& admin_group);

// kPathNotAllowed, naming the directory or file and the user, unless `who` could read `path`
// (search on every directory above it, read on the file). A path that does not resolve is left
// to the job runner, which reports it as missing.
Status CheckMayRead(const Submitter& who, const std::string& path, const char* what);

// kPathNotAllowed unless `who` could create `output`: search on every directory above it, write
// and search on its directory; and, when the file exists and `overwrite` is set, replace it (in
// a sticky directory only the file's or the directory's owner may). A directory that does not
// exist is left to the job runner (output_invalid).
Status CheckMayWriteOutput(const Submitter& who, const std::string& output, bool overwrite);

}  // namespace framemill
