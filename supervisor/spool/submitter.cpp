#include "supervisor/spool/submitter.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/posix_acl.h"
#include "common/user_rights.h"

namespace framemill {
namespace {

bool InGroups(const Submitter& who, uint32_t gid) {
  return std::find(who.groups.begin(), who.groups.end(), gid) != who.groups.end();
}

// Would the kernel grant `who` the access `want` to the file `path` with `st`
// (common/user_rights.h)? An ACL that cannot be read refuses.
bool Permits(const Submitter& who, const std::string& path, const struct stat& st, int want) {
  Result<std::vector<AclEntry>> acl = ReadAccessAcl(path);
  return acl.ok() && UserPermits(who.rights(), *acl, st, want);
}

// The absolute, link-free name of `path`, or "" when it does not resolve.
std::string RealPath(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) return "";
  std::string s(r);
  std::free(r);
  return s;
}

}  // namespace

nlohmann::json Submitter::ToJson() const { return {{"uid", uid}, {"gid", gid}, {"user", user}}; }

UserRights Submitter::rights() const {
  std::string label = "uid " + std::to_string(uid);
  if (!user.empty()) label += " (" + user + ")";
  return {uid, gid, groups, label};
}

Submitter LookupSubmitter(uint32_t uid, uint32_t file_gid) {
  Submitter s;
  s.uid = uid;
  s.gid = file_gid;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc;
  while ((rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  if (rc != 0 || found == nullptr) {
    s.groups = {file_gid};
    return s;
  }
  s.user = pw.pw_name;
  s.gid = pw.pw_gid;
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    if (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) n = 0;
  }
  groups.resize(static_cast<size_t>(std::max(n, 0)));
  s.groups.assign(groups.begin(), groups.end());
  if (!InGroups(s, s.gid)) s.groups.push_back(s.gid);
  return s;
}

Result<Submitter> SubmitterFromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("uid") || !j["uid"].is_number_unsigned() ||
      !j.contains("gid") || !j["gid"].is_number_unsigned() ||
      j["uid"].get<uint64_t>() > UINT32_MAX || j["gid"].get<uint64_t>() > UINT32_MAX) {
    return Status(StatusCode::kInternal, "owner record without a valid uid and gid");
  }
  return LookupSubmitter(j["uid"].get<uint32_t>(), j["gid"].get<uint32_t>());
}

bool IsAdmin(const Submitter& who, const std::string& admin_group) {
  if (who.uid == 0 || who.uid == ::geteuid()) return true;
  if (admin_group.empty()) return false;
  std::vector<char> buf(16384);
  group gr{};
  group* found = nullptr;
  int rc;
  while ((rc = ::getgrnam_r(admin_group.c_str(), &gr, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  return rc == 0 && found != nullptr && InGroups(who, gr.gr_gid);
}

bool MayControl(const Submitter& who, const Submitter& owner, const std::string& admin_group) {
  return who.uid == owner.uid || IsAdmin(who, admin_group);
}

Status CheckMayRead(const Submitter& who, const std::string& path, const char* what) {
  std::string resolved = RealPath(path);
  if (resolved.empty()) return Status::Ok();
  FM_RETURN_IF_ERROR(CheckSearchAbove(who.rights(), resolved).WithContext(what));
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) return Status::Ok();
  if (!Permits(who, resolved, st, kMayRead)) {
    return Status(StatusCode::kPathNotAllowed, std::string(what) + ": the submitter, " +
                                                   who.rights().label + ", may not read " +
                                                   resolved);
  }
  return Status::Ok();
}

Status CheckMayWriteOutput(const Submitter& who, const std::string& output, bool overwrite) {
  std::string dir = RealPath(DirName(output));
  if (dir.empty()) return Status::Ok();
  FM_RETURN_IF_ERROR(CheckSearchAbove(who.rights(), dir).WithContext("output"));
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) return Status::Ok();
  if (!Permits(who, dir, dst, kMayWrite | kMaySearch)) {
    return Status(StatusCode::kPathNotAllowed, "output: the submitter, " + who.rights().label +
                                                   ", may not create files in " + dir);
  }
  std::string file = dir + "/" + BaseName(output);
  struct stat fst {};
  if (!overwrite || ::lstat(file.c_str(), &fst) != 0) return Status::Ok();
  // Replacing a name is a write to the directory; a sticky directory also wants the file's or
  // the directory's owner.
  if (StickyForbidsReplace(who.rights(), dst, fst)) {
    return Status(StatusCode::kPathNotAllowed, "output: the submitter, " + who.rights().label +
                                                   ", may not replace " + file + " (owned by uid " +
                                                   std::to_string(fst.st_uid) +
                                                   " in sticky directory " + dir + ")");
  }
  return Status::Ok();
}

}  // namespace framemill
