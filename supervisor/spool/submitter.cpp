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

namespace framemill {
namespace {

constexpr int kRead = 4, kWrite = 2, kSearch = 1;

bool InGroups(const Submitter& who, uint32_t gid) {
  return std::find(who.groups.begin(), who.groups.end(), gid) != who.groups.end();
}

// Would the kernel grant `who` the access `want` (kRead | kWrite | kSearch) to the file `path`
// with `st`? By its access ACL where it has one (common/posix_acl.h: a named user's or group's
// entry, the mask), else by its mode bits: as in the kernel, the owner's bits alone decide for
// the owner, the group's alone for a member of the group. An ACL that cannot be read refuses.
bool Permits(const Submitter& who, const std::string& path, const struct stat& st, int want) {
  if (who.uid == 0) return true;  // (execute on a regular file is never asked here)
  Result<std::vector<AclEntry>> acl = ReadAccessAcl(path);
  if (!acl.ok()) return false;
  if (!acl->empty()) return AclPermits(*acl, st.st_uid, st.st_gid, who.uid, who.groups, want);
  int bits;
  if (st.st_uid == who.uid)
    bits = (st.st_mode >> 6) & 7;
  else if (InGroups(who, st.st_gid))
    bits = (st.st_mode >> 3) & 7;
  else
    bits = st.st_mode & 7;
  return (bits & want) == want;
}

std::string Who(const Submitter& who) {
  std::string s = "uid " + std::to_string(who.uid);
  if (!who.user.empty()) s += " (" + who.user + ")";
  return s;
}

// The absolute, link-free name of `path`, or "" when it does not resolve.
std::string RealPath(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) return "";
  std::string s(r);
  std::free(r);
  return s;
}

// Checks search permission on "/" and every directory above `resolved` (absolute, link-free).
Status CheckSearchAbove(const Submitter& who, const std::string& resolved) {
  for (size_t slash = 0; slash != std::string::npos && slash < resolved.size();
       slash = resolved.find('/', slash + 1)) {
    std::string dir = slash == 0 ? "/" : resolved.substr(0, slash);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      return Status(StatusCode::kPathNotAllowed, dir + ": " + std::strerror(errno));
    }
    if (!Permits(who, dir, st, kSearch)) {
      return Status(StatusCode::kPathNotAllowed,
                    "the submitter, " + Who(who) + ", may not search " + dir);
    }
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json Submitter::ToJson() const { return {{"uid", uid}, {"gid", gid}, {"user", user}}; }

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
  FM_RETURN_IF_ERROR(CheckSearchAbove(who, resolved).WithContext(what));
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) return Status::Ok();
  if (!Permits(who, resolved, st, kRead)) {
    return Status(StatusCode::kPathNotAllowed, std::string(what) + ": the submitter, " + Who(who) +
                                                   ", may not read " + resolved);
  }
  return Status::Ok();
}

Status CheckMayWriteOutput(const Submitter& who, const std::string& output, bool overwrite) {
  std::string dir = RealPath(DirName(output));
  if (dir.empty()) return Status::Ok();
  FM_RETURN_IF_ERROR(CheckSearchAbove(who, dir).WithContext("output"));
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) return Status::Ok();
  if (!Permits(who, dir, dst, kWrite | kSearch)) {
    return Status(StatusCode::kPathNotAllowed,
                  "output: the submitter, " + Who(who) + ", may not create files in " + dir);
  }
  std::string file = dir + "/" + BaseName(output);
  struct stat fst {};
  if (!overwrite || ::lstat(file.c_str(), &fst) != 0) return Status::Ok();
  // Replacing a name is a write to the directory; a sticky directory also wants the file's or
  // the directory's owner.
  if ((dst.st_mode & S_ISVTX) && who.uid != 0 && fst.st_uid != who.uid && dst.st_uid != who.uid) {
    return Status(StatusCode::kPathNotAllowed, "output: the submitter, " + Who(who) +
                                                   ", may not replace " + file + " (owned by uid " +
                                                   std::to_string(fst.st_uid) +
                                                   " in sticky directory " + dir + ")");
  }
  return Status::Ok();
}

}  // namespace framemill
