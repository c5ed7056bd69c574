// The service's queue over its GPUs (supervisor/service/gpu_scheduler.h): named GPUs, shares of
// the free ones, warm places, and the GPUs a job may name.
#include <doctest/doctest.h>

#include "supervisor/service/gpu_scheduler.h"

using namespace framemill;

namespace {

GpuAsk Share(const std::string& model = "m.pt") { return GpuAsk{{}, model}; }
GpuAsk Named(std::vector<int> gpus) { return GpuAsk{std::move(gpus), "m.pt"}; }

}  // namespace

TEST_CASE("gpu scheduler: a job alone takes every free GPU, a queue shares them out") {
  const std::set<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(ChooseGpus(all, Share(), 1, {}) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(ChooseGpus(all, Share(), 2, {}) == std::vector<int>{0, 1, 2, 3});
  CHECK(ChooseGpus(all, Share(), 8, {}) == std::vector<int>{0});
  CHECK(ChooseGpus(all, Share(), 3, {}) == std::vector<int>{0, 1});  // 8 / 3, rounded down
  // More jobs than GPUs: still one each, while one is free.
  CHECK(ChooseGpus({5}, Share(), 20, {}) == std::vector<int>{5});
  CHECK(ChooseGpus({}, Share(), 1, {}).empty());  // none free: it waits
  CHECK(ChooseGpus({2, 6}, Share(), 1, {}) == std::vector<int>{2, 6});
}

TEST_CASE("gpu scheduler: a job naming GPUs waits until all of them are free") {
  CHECK(ChooseGpus({0, 1, 2}, Named({2, 0}), 1, {}) == std::vector<int>{0, 2});
  CHECK(ChooseGpus({0, 2}, Named({0, 1}), 1, {}).empty());  // GPU 1 is busy
  CHECK(ChooseGpus({1}, Named({1}), 5, {}) == std::vector<int>{1});  // the queue behind: no matter
}

TEST_CASE("gpu scheduler: a share goes where the model's idle workers are, else around the others") {
  const std::set<int> free = {0, 1, 2, 3};
  const std::vector<WarmPlace> warm = {{{0}, "other.pt"}, {{2}, "m.pt"}, {{1, 3}, "m.pt"}};
  // One GPU each (4 jobs): GPU 2's idle workers have this model.
  CHECK(ChooseGpus(free, Share("m.pt"), 4, warm) == std::vector<int>{2});
  // Two GPUs each: the pool on GPUs 1 and 3.
  CHECK(ChooseGpus(free, Share("m.pt"), 2, warm) == std::vector<int>{1, 3});
  // Another model: first the GPUs no warm pool holds (here every GPU holds one), then in order.
  CHECK(ChooseGpus(free, Share("new.pt"), 4, warm) == std::vector<int>{0});
  const std::vector<WarmPlace> one = {{{0}, "other.pt"}};
  CHECK(ChooseGpus(free, Share("new.pt"), 4, one) == std::vector<int>{1});
  CHECK(ChooseGpus(free, Share("new.pt"), 2, one) == std::vector<int>{1, 2});
  // Warm workers on a busy GPU do not count.
  CHECK(ChooseGpus({0, 1}, Share("m.pt"), 2, {{{2}, "m.pt"}}) == std::vector<int>{0});
  // A named job is not moved by warm places.
  CHECK(ChooseGpus(free, Named({3}), 1, warm) == std::vector<int>{3});
}

TEST_CASE("gpu scheduler: a job may name only the service's GPUs, each once") {
  CHECK(CheckGpuAsk({0, 1}, Share()).ok());
  CHECK(CheckGpuAsk({0, 1}, Named({1, 0})).ok());
  Status foreign = CheckGpuAsk({0, 1}, Named({0, 5}));
  CHECK(foreign.code() == StatusCode::kInvalidJob);
  CHECK(foreign.message() ==
        "gpus: GPU 5 is not one of the service's GPUs [0, 1] (config service_gpus)");
  Status twice = CheckGpuAsk({0, 1}, Named({1, 1}));
  CHECK(twice.code() == StatusCode::kInvalidJob);
  CHECK(twice.message() == "gpus: GPU 1 named twice");
}
