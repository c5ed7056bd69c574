// A model that maps a batch of frames to a batch of frames, behind one interface so that other
// formats (torch.export / AOTInductor .pt2 packages on LibTorch builds that have them) can sit
// beside TorchScript; and what every model shares whatever its format: the device and precision
// a job asks for, the errors a model call raises, the probe of its output size. The formats'
// loaders are beside it (torchscript_model.h, pt2_model.h); model_loader.h reads a model file
// and hands it to the one its content names.
//
// The contract: input float [N,3,H,W] RGB in [0,1] on the model's device; output float
// [N,3,H*s,W*s] (any s the model likes, found by Probe). Values outside [0,1] are clamped by
// the caller. Not thread-safe: one model per worker process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "common/config.h"
#include "common/status.h"

namespace framemill {

class FrameModel {
 public:
  virtual ~FrameModel() = default;

  // Runs the model on one batch. LibTorch exceptions become a kModelInvalid Status.
  virtual Result<torch::Tensor> Run(const torch::Tensor& batch) = 0;

  virtual const torch::Device& device() const = 0;
  virtual torch::ScalarType dtype() const = 0;
};

// Resolves a job's device: auto -> cuda:0 when CUDA works, else cpu; cuda -> cuda:0.
// Fails when CUDA is asked for and is not there.
Result<torch::Device> ResolveDevice(const DeviceSetting& device);

// A spare worker's head start (worker/worker_main.cpp, --await-model): on `device`, what any
// model's first call pays whatever the model is: the CUDA context, and the first convolution and
// matrix product in each precision (cuDNN's and cuBLAS's libraries and handles). Tiny tensors,
// freed again (the caching allocator keeps their block). Errors are the caller's to report; the
// job's own load then meets the same error. `timings`, when given, gets where the time went
// ("context 310 ms, Float 200 ms, Half ...", in LibTorch's names).
Status PrepareDevice(const torch::Device& device, std::string* timings = nullptr);

// The precision's dtype; fp16 needs a CUDA device.
Result<torch::ScalarType> ResolvePrecision(Precision precision, const torch::Device& device);

// The first line of a LibTorch error: the rest is a C++ backtrace that helps nobody here.
std::string FirstLine(const std::string& what);

// The line of an error from a TorchScript model that says what went wrong: the interpreter puts
// its traceback first ("The following operation failed ...") and the error itself
// ("RuntimeError: unable to open file ...: Permission denied") after it. FirstLine otherwise.
std::string ModelErrorLine(const std::string& what);

// The Status of an exception a model call raised: kOutOfMemory when the device ran out of memory
// (a c10::OutOfMemoryError, as LibTorch 2.x raises it and the 1.13 CUDA allocator too; or a
// message saying "CUDA out of memory", which is all that is left of one once the TorchScript
// interpreter of 1.13 has rethrown it as a plain error; or the CPU allocator's "can't allocate
// memory"); kModelInvalid otherwise. The message is "model raised: " and ModelErrorLine.
Status ModelRaised(const std::exception& e);

// Hands the device's cached, unused memory back (CUDA's caching allocator), after an
// out-of-memory error, so that a smaller retry finds it. Nothing on the CPU.
void ReleaseCachedMemory(const torch::Device& device);

// Runs the model once on a random batch of `batch` frames of width x height and returns its
// output size (w, h), checking the output's shape against the contract.
Result<std::pair<int64_t, int64_t>> ProbeOutputSize(FrameModel& model, int64_t width,
                                                    int64_t height, int64_t batch = 1);

}  // namespace framemill
