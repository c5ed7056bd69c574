// The service's worker cache (supervisor/service/worker_cache.h): warm places, spare places lent
// and given back, the workers' log folders. No worker is started here (WorkerPool's tests do).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "supervisor/service/worker_cache.h"

using namespace framemill;

namespace {

std::string TempDir() {
  char dir[] = "/tmp/framemill-unit-service-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

}  // namespace

TEST_CASE("worker cache: warm places by GPU set, spares lent to the jobs on their GPUs") {
  const std::string workers = TempDir();
  Config config;
  config.service_gpus = {0, 1, 2};
  config.spare_workers = true;
  WorkerCache cache(config, /*gpu_labels=*/true, workers);
  cache.MakeSparePlaces();  // no spare is started before Keep
  WorkerLease a = cache.Take({0, 1}, false, "m.pt");
  CHECK(a.log_dir() == workers + "/gpus-0-1");
  CHECK(IsDirectory(workers + "/gpus-0-1"));
  CHECK(a.spares().empty());  // its places' spares were not started
  WorkerLease b = cache.Take({1, 2}, false, "m.pt");
  CHECK(b.warm() != a.warm());
  WorkerLease cpu = cache.Take({}, true, "m.pt");  // a CPU job beside GPU jobs
  CHECK(cpu.log_dir() == workers + "/cpu");
  cache.Return(&a, "a");
  WorkerLease again = cache.Take({0, 1}, false, "n.pt");
  CHECK(again.warm() == a.warm());  // the same place, idle again
  CHECK(cache.IdlePlaces().empty());  // places without workers are not offered
  cache.Return(&again, "a2");
  cache.Return(&b, "b");
  cache.Return(&cpu, "c");
  cache.Stop();
  (void)RemoveTree(workers);
}

TEST_CASE("worker cache: the workers' log folders") {
  const std::string workers = TempDir();
  CHECK(WorkerLogDir(workers, false, {0}, false) == workers);  // no GPU set: one folder
  CHECK(WorkerLogDir(workers, true, {3}, false) == workers + "/gpus-3");
  CHECK(WorkerLogDir(workers, true, {}, false) == workers + "/cpu");
  struct stat st {};
  REQUIRE(::stat((workers + "/gpus-3").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  (void)RemoveTree(workers);
}
