// A user's rights checked on open files (common/user_rights.h): what the job runner asks of each
// file a spool job names, for its submitter, after it has opened it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/user_rights.h"

using namespace framemill;

namespace {

constexpr uint32_t kEve = 23456;

UserRights Eve() { return UserRights{kEve, kEve, {kEve}, "uid 23456"}; }

// A fresh directory of this process's user, mode 0755.
std::string Dir(const std::string& name) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/framemill-rights-" +
                          name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  return dir;
}

UniqueFd Open(const std::string& path, int flags = O_RDONLY) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  REQUIRE(fd.valid());
  return fd;
}

}  // namespace

TEST_CASE("user rights: an open file is the user's to read by its own bits and the folders above") {
  const std::string dir = Dir("read");
  const std::string file = dir + "/clip.mp4";
  std::ofstream(file) << "frames";
  ::chmod(file.c_str(), 0644);
  UniqueFd fd = Open(file);
  CHECK(CheckMayReadOpened(Eve(), fd.get(), "input").ok());
  // The bits of the file as it is now, not as it was opened: a private file is refused.
  ::chmod(file.c_str(), 0600);
  Status refused = CheckMayReadOpened(Eve(), fd.get(), "input");
  CHECK(refused.code() == StatusCode::kPathNotAllowed);
  CHECK(refused.message() == "input: the submitter, uid 23456, may not read " + file);
  // The owner reads it; root is granted everything.
  struct stat st {};
  REQUIRE(::fstat(fd.get(), &st) == 0);
  CHECK(
      CheckMayReadOpened(UserRights{st.st_uid, st.st_gid, {st.st_gid}, "owner"}, fd.get(), "input")
          .ok());
  CHECK(CheckMayReadOpened(UserRights{0, 0, {0}, "root"}, fd.get(), "input").ok());
  // A readable file in a folder the user may not search.
  ::chmod(file.c_str(), 0644);
  ::chmod(dir.c_str(), 0700);
  refused = CheckMayReadOpened(Eve(), fd.get(), "model");
  CHECK(refused.code() == StatusCode::kPathNotAllowed);
  CHECK(refused.message() == "model: the submitter, uid 23456, may not search " + dir);
  // A file reached through a link is judged where it lies, not where the link is.
  const std::string mine = Dir("read-link");
  std::filesystem::create_symlink(file, mine + "/link.mp4");
  UniqueFd linked = Open(mine + "/link.mp4");
  CHECK(CheckMayReadOpened(Eve(), linked.get(), "input").code() == StatusCode::kPathNotAllowed);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(mine);
}

TEST_CASE("user rights: an output folder and a file replaced in it, as the user could") {
  const std::string dir = Dir("write");
  UniqueFd open = Open(dir, O_RDONLY | O_DIRECTORY);
  Status refused = CheckMayCreateInOpened(Eve(), open.get(), "output");
  CHECK(refused.code() == StatusCode::kPathNotAllowed);
  CHECK(refused.message() == "output: the submitter, uid 23456, may not create files in " + dir);
  ::chmod(dir.c_str(), 01777);  // sticky, as /tmp
  CHECK(CheckMayCreateInOpened(Eve(), open.get(), "output").ok());
  std::ofstream(dir + "/theirs.mp4") << "another user's";
  Status replace = CheckMayReplaceAt(Eve(), open.get(), "theirs.mp4", "output");
  CHECK(replace.code() == StatusCode::kPathNotAllowed);
  CHECK(replace.message().find("may not replace " + dir + "/theirs.mp4") != std::string::npos);
  CHECK(CheckMayReplaceAt(Eve(), open.get(), "new.mp4", "output").ok());  // nothing there
  ::chmod(dir.c_str(), 0777);  // not sticky: writing the folder is enough
  CHECK(CheckMayReplaceAt(Eve(), open.get(), "theirs.mp4", "output").ok());
  std::filesystem::remove_all(dir);
}
