// A real .pt2 package (tests/data/tiny-cuda.pt2, made by scripts/export-pt2.py on an H200 with
// torch 2.11: see tests/data/SOURCES.md) loaded and run on the GPU it was built for. A file of its
// own because ctest runs the worker's unit tests a process per file (tests/CMakeLists.txt) and
// this case is skipped where there is no GPU: every case of a file skips together or not at all.
#include "doctest_with_torch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include <torch/cuda.h>

#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"
#include "worker/model/pt2_model.h"
#include "skip.h"

using namespace framemill;

namespace {
const std::string kPackage = std::string(FRAMEMILL_SOURCE_DIR) + "/tests/data/tiny-cuda.pt2";
}  // namespace

TEST_CASE("a .pt2 package runs on the GPU it was built for") {
  const char* env = std::getenv("FRAMEMILL_TEST_DEVICE");
  if (!Pt2Supported()) unit::SkipTest("this LibTorch loads no .pt2 packages (2.6 and later do)");
  if (env == nullptr || std::strncmp(env, "cuda", 4) != 0 || !torch::cuda::is_available()) {
    unit::SkipTest("needs FRAMEMILL_TEST_DEVICE=cuda and a GPU");
  }
  // The package (x + 0.1 * conv(relu(conv(x))), fp16, torch 2.11, sm_90) keeps the frame size.
  Result<std::unique_ptr<FrameModel>> gpu =
      LoadFrameModel(kPackage, torch::Device(torch::kCUDA, 0), torch::kFloat16);
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  Result<std::pair<int64_t, int64_t>> size = ProbeOutputSize(**gpu, 64, 64);
  REQUIRE_MESSAGE(size.ok(), size.status().ToString());
  CHECK(size->first == 64);
  CHECK(size->second == 64);
  // The package was traced with a contiguous example: a channels-last batch (what the worker
  // hands every model) must give the same pixels, not the same bytes read with other strides.
  torch::InferenceMode guard;
  torch::Tensor x = torch::rand({2, 3, 48, 80}, torch::TensorOptions()
                                                    .device(torch::kCUDA, 0)
                                                    .dtype(torch::kFloat16));
  Result<torch::Tensor> nchw = (*gpu)->Run(x.contiguous());
  Result<torch::Tensor> nhwc = (*gpu)->Run(x.contiguous(torch::MemoryFormat::ChannelsLast));
  REQUIRE(nchw.ok());
  REQUIRE(nhwc.ok());
  CHECK(torch::allclose(nchw->to(torch::kFloat), nhwc->to(torch::kFloat), 1e-3, 1e-3));
}
