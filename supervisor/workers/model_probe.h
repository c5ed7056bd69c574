// What the first worker to load the model found of it: the model's output size for the probe's
// input, which every later worker must report too, in proportion to the input it probed (a
// compiled engine the workers move to mid-job probes at the job's frame size: it must scale as
// the model did; workers that disagree fail the job, an engine that does is dropped), and the
// label of the device the job's workers run on. Owns those figures; the Dispatcher gives it the
// checked reports (shm_validate.h's ProbeReport). Pure: no process. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/shm_validate.h"

namespace framemill {

class ModelProbe {
 public:
  // The first ready worker's report, for a probe of `in_width` x `in_height`. Its device becomes
  // the label when it has a label's form ("cpu", "cuda:N"); else the label is `configured`'s
  // name.
  void Take(const ProbeReport& first, uint32_t in_width, uint32_t in_height,
            const DeviceSetting& configured);
  // Whether a later worker's report, for a probe of `in_width` x `in_height`, scales its input
  // as the first one's did (at the same input: the same output size).
  bool Agrees(const ProbeReport& later, uint32_t in_width, uint32_t in_height) const {
    return uint64_t{later.width} * in_width_ == uint64_t{width_} * in_width &&
           uint64_t{later.height} * in_height_ == uint64_t{height_} * in_height;
  }
  // Where a worker runs: "cuda:N" when it is pinned to GPU N (`gpu` >= 0), else the label
  // (`configured`'s name before Take).
  std::string Device(int gpu, const DeviceSetting& configured) const;

 private:
  uint32_t width_ = 0, height_ = 0;
  uint32_t in_width_ = 0, in_height_ = 0;
  std::string device_;  // the label; empty before Take
};

// Whether a device name a worker reported has the form a label may take: "cpu" or "cuda:N"
// (N up to three digits).
bool PlainDevice(const std::string& device);

}  // namespace framemill
