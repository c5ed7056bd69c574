// The order in which the service claims waiting jobs, so that no submitter can hold the queue:
//
//   1. priority, high first; a priority above 0 counts only for admins (submitter.h IsAdmin:
//      root, the service's user, the config's admin_group): anyone else's is taken as 0;
//   2. then each submitter's turn: a user's k-th waiting job (in their own priority and arrival
//      order) has turn k plus the jobs that user runs now, so that users take turns and one
//      user's backlog of thousands waits behind nobody else's first job;
//   3. then, between equal turns, the user served least recently first (the service numbers its
//      claims), so that with one job at a time users alternate;
//   4. then arrival, when the file came into incoming/ (its ctime, which no user can date back).
//
// A user who runs `max_running_per_user` jobs already has none claimed until one ends; a user's
// waiting jobs beyond their first `max_queued_per_user` (by arrival) are refused (OverQueued).
// Thread-compatible: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "supervisor/spool/spool.h"

namespace framemill {

struct QueueRules {
  // Whether `uid` may ask for a priority above 0 (asked once per uid and call).
  std::function<bool(uint32_t uid)> may_raise_priority;
  int max_running_per_user = 0;  // 0 = no limit
};

// The priority a job of `asked` priority from a submitter counts with.
inline int CountedPriority(int asked, bool may_raise) { return may_raise ? asked : std::min(asked, 0); }

// What the service knows of each user now, by uid: the jobs running, and the number of the
// service's latest claim of theirs (0 = none).
struct QueueUsers {
  std::map<uint32_t, int> running;
  std::map<uint32_t, uint64_t> last_claim;
};

// `waiting` (Spool::Incoming) in claim order by `rules`. The entries of users at their running
// limit are left out.
std::vector<SpoolEntry> OrderQueue(std::vector<SpoolEntry> waiting, const QueueUsers& users,
                                   const QueueRules& rules);

// The entries of `waiting` past each user's first `max_queued` by arrival (submitted_ns, then
// id), to be refused; none with `max_queued` 0 (no limit).
std::vector<SpoolEntry> OverQueued(const std::vector<SpoolEntry>& waiting, int max_queued);

}  // namespace framemill
