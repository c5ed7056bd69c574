#include "supervisor/spool/queue_order.h"

#include <algorithm>
#include <tuple>

namespace framemill {

namespace {

template <typename T>
T Of(const std::map<uint32_t, T>& by_uid, uint32_t uid) {
  auto it = by_uid.find(uid);
  return it == by_uid.end() ? T{} : it->second;
}

}  // namespace

std::vector<SpoolEntry> OrderQueue(std::vector<SpoolEntry> waiting, const QueueUsers& users,
                                   const QueueRules& rules) {
  std::map<uint32_t, bool> may_raise;
  auto raises = [&](uint32_t uid) {
    auto it = may_raise.find(uid);
    if (it == may_raise.end()) {
      it = may_raise.emplace(uid, rules.may_raise_priority && rules.may_raise_priority(uid)).first;
    }
    return it->second;
  };
  auto running_of = [&](uint32_t uid) { return Of(users.running, uid); };
  struct Ranked {
    SpoolEntry entry;
    int priority;
    int64_t turn;
    uint64_t last_claim;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(waiting.size());
  for (SpoolEntry& e : waiting) {
    if (rules.max_running_per_user > 0 && running_of(e.uid) >= rules.max_running_per_user) continue;
    const int priority = CountedPriority(e.priority, raises(e.uid));
    const uint64_t last_claim = Of(users.last_claim, e.uid);
    ranked.push_back({std::move(e), priority, 0, last_claim});
  }
  // Each user's own jobs in their order first, to number their turns.
  auto own_order = [](const Ranked& a, const Ranked& b) {
    return std::tie(a.entry.uid, b.priority, a.entry.submitted_ns, a.entry.id) <
           std::tie(b.entry.uid, a.priority, b.entry.submitted_ns, b.entry.id);
  };
  std::sort(ranked.begin(), ranked.end(), own_order);
  for (size_t i = 0; i < ranked.size(); ++i) {
    const bool first = i == 0 || ranked[i - 1].entry.uid != ranked[i].entry.uid;
    ranked[i].turn = first ? running_of(ranked[i].entry.uid) : ranked[i - 1].turn + 1;
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(b.priority, a.turn, a.last_claim, a.entry.submitted_ns, a.entry.id) <
           std::tie(a.priority, b.turn, b.last_claim, b.entry.submitted_ns, b.entry.id);
  });
  std::vector<SpoolEntry> order;
  order.reserve(ranked.size());
  for (Ranked& r : ranked) order.push_back(std::move(r.entry));
  return order;
}

std::vector<SpoolEntry> OverQueued(const std::vector<SpoolEntry>& waiting, int max_queued) {
  if (max_queued <= 0) return {};
  std::map<uint32_t, int> per_user;
  for (const SpoolEntry& e : waiting) ++per_user[e.uid];
  std::vector<const SpoolEntry*> arrival;
  for (const SpoolEntry& e : waiting) {
    if (per_user[e.uid] > max_queued) arrival.push_back(&e);
  }
  std::sort(arrival.begin(), arrival.end(), [](const SpoolEntry* a, const SpoolEntry* b) {
    return std::tie(a->uid, a->submitted_ns, a->id) < std::tie(b->uid, b->submitted_ns, b->id);
  });
  std::vector<SpoolEntry> over;
  std::map<uint32_t, int> seen;
  for (const SpoolEntry* e : arrival) {
    if (++seen[e->uid] > max_queued) over.push_back(*e);
  }
  return over;
}

}  // namespace framemill
