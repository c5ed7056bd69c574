#include "common/user_rights.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

#include "common/checked_file.h"

namespace framemill {
namespace {

bool InGroups(const UserRights& user, uint32_t gid) {
  return std::find(user.groups.begin(), user.groups.end(), gid) != user.groups.end();
}

Status NotAllowed(const UserRights& user, const std::string& what, const std::string& may) {
  return Status(StatusCode::kPathNotAllowed,
                what + ": the submitter, " + user.label + ", may not " + may);
}

// The open file `fd`: its status, its ACL and its real path. Errors: kPathNotAllowed when any
// cannot be read (a file whose rights are unknown is not granted).
struct Opened {
  struct stat st {};
  std::vector<AclEntry> acl;
  std::string real;
};
Result<Opened> ReadOpened(int fd, const std::string& what) {
  Opened o;
  o.real = FdRealPath(fd);
  if (o.real.empty() || o.real[0] != '/' || ::fstat(fd, &o.st) != 0) {
    return Status(StatusCode::kPathNotAllowed, what + ": the open file has no name to check");
  }
  Result<std::vector<AclEntry>> acl = ReadAccessAclOf(fd, o.real);
  if (!acl.ok()) return Status(StatusCode::kPathNotAllowed, what + ": " + acl.status().message());
  o.acl = std::move(*acl);
  return o;
}

}  // namespace

bool UserPermits(const UserRights& user, const std::vector<AclEntry>& acl, const struct stat& st,
                 int want) {
  if (user.uid == 0) return true;  // (execute on a regular file is never asked here)
  if (!acl.empty()) return AclPermits(acl, st.st_uid, st.st_gid, user.uid, user.groups, want);
  int bits;
  if (st.st_uid == user.uid)
    bits = (st.st_mode >> 6) & 7;
  else if (InGroups(user, st.st_gid))
    bits = (st.st_mode >> 3) & 7;
  else
    bits = st.st_mode & 7;
  return (bits & want) == want;
}

bool StickyForbidsReplace(const UserRights& user, const struct stat& dir, const struct stat& entry) {
  return (dir.st_mode & S_ISVTX) && user.uid != 0 && entry.st_uid != user.uid &&
         dir.st_uid != user.uid;
}

Status CheckSearchAbove(const UserRights& user, const std::string& real) {
  for (size_t slash = 0; slash != std::string::npos && slash < real.size();
       slash = real.find('/', slash + 1)) {
    const std::string dir = slash == 0 ? "/" : real.substr(0, slash);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      return Status(StatusCode::kPathNotAllowed, dir + ": " + std::strerror(errno));
    }
    Result<std::vector<AclEntry>> acl = ReadAccessAcl(dir);
    if (!acl.ok() || !UserPermits(user, *acl, st, kMaySearch)) {
      return Status(StatusCode::kPathNotAllowed,
                    "the submitter, " + user.label + ", may not search " + dir);
    }
  }
  return Status::Ok();
}

Status CheckMayReadOpened(const UserRights& user, int fd, const std::string& what) {
  Result<Opened> o = ReadOpened(fd, what);
  if (!o.ok()) return o.status();
  FM_RETURN_IF_ERROR(CheckSearchAbove(user, o->real).WithContext(what));
  if (!UserPermits(user, o->acl, o->st, kMayRead)) return NotAllowed(user, what, "read " + o->real);
  return Status::Ok();
}

Status CheckMayCreateInOpened(const UserRights& user, int dir_fd, const std::string& what) {
  Result<Opened> o = ReadOpened(dir_fd, what);
  if (!o.ok()) return o.status();
  FM_RETURN_IF_ERROR(CheckSearchAbove(user, o->real).WithContext(what));
  if (!UserPermits(user, o->acl, o->st, kMayWrite | kMaySearch)) {
    return NotAllowed(user, what, "create files in " + o->real);
  }
  return Status::Ok();
}

Status CheckMayReplaceAt(const UserRights& user, int dir_fd, const std::string& name,
                         const std::string& what) {
  struct stat dst {};
  struct stat fst {};
  if (::fstat(dir_fd, &dst) != 0) {
    return Status(StatusCode::kPathNotAllowed, what + ": the open directory cannot be read");
  }
  if (::fstatat(dir_fd, name.c_str(), &fst, AT_SYMLINK_NOFOLLOW) != 0) return Status::Ok();
  if (StickyForbidsReplace(user, dst, fst)) {
    return NotAllowed(user, what,
                      "replace " + FdRealPath(dir_fd) + "/" + name + " (owned by uid " +
                          std::to_string(fst.st_uid) + " in a sticky directory)");
  }
  return Status::Ok();
}

}  // namespace framemill
