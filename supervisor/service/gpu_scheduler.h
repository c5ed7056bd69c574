// Which of the service's GPUs a job gets (config `service_gpus`): the pure rules of the service's
// queue over a set of GPUs. The service (service.h) asks ChooseGpus for the job at the head of its
// queue each time a GPU frees or a job arrives; the head starts when the answer is not empty,
// and nothing behind it starts before it does (priorities hold: a later job never takes the GPUs
// the head is waiting for).
//
//   - A job that names GPUs (`gpus`) waits until all of them are free.
//   - A job that names none takes a share of the free GPUs: the free ones divided by the jobs
//     waiting (itself and those behind it), at least one. A job alone in the queue takes every
//     free GPU; eight jobs on eight free GPUs take one each.
//   - Among the free GPUs, a share goes where idle workers of the same model are loaded (a warm
//     pool of exactly that many GPUs), else to the lowest-numbered free GPUs that hold no warm
//     pool, then to the rest.
// A running job keeps the GPUs it started with until it ends (it does not grow when others
// end).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

// Idle workers the service keeps loaded: on which GPUs, for which model file (as the job names
// it).
struct WarmPlace {
  std::vector<int> gpus;
  std::string model;
};

struct GpuAsk {
  std::vector<int> gpus;  // the GPUs the job names; empty: a share of the free ones
  std::string model;      // the job's model file, as it names it (to find warm workers)
};

// "[0, 1]": GPU indices as the log and the messages write them.
std::string GpuListText(const std::vector<int>& gpus);

// kInvalidJob when `ask` names a GPU the service does not own (the message lists the owned ones)
// or names one twice.
Status CheckGpuAsk(const std::vector<int>& owned, const GpuAsk& ask);

// The GPUs the head of the queue gets now, in ascending order; empty: it waits. `free` are the
// owned GPUs no running job holds; `waiting` the jobs in the queue, the head included (>= 1).
std::vector<int> ChooseGpus(const std::set<int>& free, const GpuAsk& ask, int waiting,
                            const std::vector<WarmPlace>& warm);

}  // namespace framemill
