// How framemill lays its shared memory out under /dev/shm, for the two files that implement
// common/shared_memory.h: shared_memory.cpp (this process's own directory, scopes and objects) and
// shm_leftovers.cpp (what processes that have ended left there: listing and removal). Not for other
// callers: common/shared_memory.h is the interface.
//
// /dev/shm/framemill-XXXXXX/ is one process's private directory (mode 0700), with its owner record
// ("<pid> <start time>", ProcessIdentity) in kOwnerFile, its objects, and its scopes
// (scope-XXXXXX/, each bound by one worker's sandbox) holding links to objects of the directory.
#pragma once

namespace framemill::shm_layout {

inline constexpr const char* kShmDir = "/dev/shm";
inline constexpr const char* kDirPrefix = "framemill-";
inline constexpr const char* kOwnerFile = "owner";

// Removes everything in the directory `dir_fd` (not the directory itself), never following a
// link, `depth` levels below a private directory (a scope is 1). Returns how many files (and
// links) it removed, the owner record aside.
int RemoveTree(int dir_fd, int depth);

}  // namespace framemill::shm_layout
