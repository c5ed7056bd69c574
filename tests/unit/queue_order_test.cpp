// The service's queue order (supervisor/spool/queue_order.h): priorities above 0 for admins only,
// users in turns, arrival by the kernel's time, and a per-user cap on running jobs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "supervisor/spool/queue_order.h"

using framemill::OrderQueue;
using framemill::QueueRules;
using framemill::QueueUsers;
using framemill::SpoolEntry;

namespace {

constexpr uint32_t kAdmin = 0, kAlice = 1001, kBob = 1002, kCarol = 1003;

SpoolEntry Waiting(const std::string& id, uint32_t uid, int priority, int64_t arrived) {
  SpoolEntry e;
  e.id = id;
  e.uid = uid;
  e.priority = priority;
  e.submitted_ns = arrived;
  return e;
}

std::string Ids(const std::vector<SpoolEntry>& order) {
  std::string ids;
  for (const SpoolEntry& e : order) ids += (ids.empty() ? "" : " ") + e.id;
  return ids;
}

QueueUsers Running(uint32_t uid, int jobs) {
  QueueUsers users;
  users.running = {{uid, jobs}};
  return users;
}

QueueRules Rules(int max_running = 0) {
  QueueRules r;
  r.may_raise_priority = [](uint32_t uid) { return uid == kAdmin; };
  r.max_running_per_user = max_running;
  return r;
}

}  // namespace

TEST_CASE("queue: a user's backlog at priority 1000 waits behind another user's first job") {
  std::vector<SpoolEntry> waiting;
  for (int i = 0; i < 5; ++i) waiting.push_back(Waiting("a" + std::to_string(i), kAlice, 1000, i));
  waiting.push_back(Waiting("b0", kBob, 0, 100));
  waiting.push_back(Waiting("b1", kBob, 0, 101));
  // Alice may not raise her priority: her 1000 counts as 0, and Bob's first job comes second.
  CHECK(Ids(OrderQueue(waiting, QueueUsers{}, Rules())) == "a0 b0 a1 b1 a2 a3 a4");
}

TEST_CASE("queue: an admin's priority counts, and a negative one counts for anyone") {
  const std::vector<SpoolEntry> waiting = {Waiting("a0", kAlice, 5, 1), Waiting("r0", kAdmin, 5, 2),
                                           Waiting("b0", kBob, -3, 0), Waiting("c0", kCarol, 0, 3)};
  CHECK(Ids(OrderQueue(waiting, QueueUsers{}, Rules())) == "r0 a0 c0 b0");
}

TEST_CASE("queue: arrival orders equal turns, and running jobs count as turns taken") {
  const std::vector<SpoolEntry> waiting = {Waiting("a0", kAlice, 0, 10), Waiting("a1", kAlice, 0, 11),
                                           Waiting("b0", kBob, 0, 20), Waiting("c0", kCarol, 0, 5)};
  CHECK(Ids(OrderQueue(waiting, QueueUsers{}, Rules())) == "c0 a0 b0 a1");
  // Alice runs two jobs now: Bob and Carol go first.
  CHECK(Ids(OrderQueue(waiting, Running(kAlice, 2), Rules())) == "c0 b0 a0 a1");
}

TEST_CASE("queue: a user at max_running_per_user has nothing claimed until a job ends") {
  const std::vector<SpoolEntry> waiting = {Waiting("a0", kAlice, 0, 1), Waiting("b0", kBob, 0, 2)};
  CHECK(Ids(OrderQueue(waiting, Running(kAlice, 1), Rules(1))) == "b0");
  CHECK(Ids(OrderQueue(waiting, Running(kAlice, 1), Rules(2))) == "b0 a0");
  CHECK(Ids(OrderQueue(waiting, Running(kAlice, 2), Rules(2))) == "b0");
  CHECK(Ids(OrderQueue(waiting, Running(kBob, 1), Rules(0))) == "a0 b0");
}

TEST_CASE("queue: with one job at a time, the user served least recently goes first") {
  const std::vector<SpoolEntry> waiting = {Waiting("a1", kAlice, 0, 1), Waiting("a2", kAlice, 0, 2),
                                           Waiting("b0", kBob, 0, 3)};
  QueueUsers users;
  CHECK(Ids(OrderQueue(waiting, users, Rules())) == "a1 b0 a2");
  users.last_claim = {{kAlice, 7}};  // Alice's a0 was the service's 7th claim, Bob never had one
  CHECK(Ids(OrderQueue(waiting, users, Rules())) == "b0 a1 a2");
  users.last_claim = {{kAlice, 7}, {kBob, 8}};
  CHECK(Ids(OrderQueue(waiting, users, Rules())) == "a1 b0 a2");
}

TEST_CASE("queue order: a user's waiting jobs past max_queued_per_user, the latest, are refused") {
  const std::vector<SpoolEntry> waiting = {
      Waiting("a3", kAlice, 0, 30), Waiting("b1", kBob, 0, 15), Waiting("a1", kAlice, 0, 10),
      Waiting("a4", kAlice, 5, 40), Waiting("a2", kAlice, 0, 20), Waiting("b2", kBob, 0, 25)};
  // Alice's first two by arrival stay, whatever the priority the later ones ask; Bob is within.
  CHECK(Ids(framemill::OverQueued(waiting, 2)) == "a3 a4");
  CHECK(Ids(framemill::OverQueued(waiting, 4)).empty());
  CHECK(Ids(framemill::OverQueued(waiting, 0)).empty());  // no limit
  CHECK(Ids(framemill::OverQueued(waiting, 1)) == "a2 a3 a4 b2");
}
