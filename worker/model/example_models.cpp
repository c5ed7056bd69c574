#include "worker/model/example_models.h"

#include <cstdint>
#include <cmath>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/script.h>

namespace framemill {
namespace {

constexpr int kHeavyWidth = 64;  // channels of the heavy model's hidden layers
constexpr int kHeavyLayers = 8;  // hidden 3x3 convolutions
constexpr int kRestoreWidth = 64;   // channels of the restore model's residual blocks
constexpr int kRestoreBlocks = 8;   // residual blocks of two 3x3 convolutions each

torch::jit::Module Identity() {
  torch::jit::Module m("framemill.Identity");
  m.define(R"(
def forward(self, x):
    return x
)");
  return m;
}

torch::jit::Module Invert() {
  torch::jit::Module m("framemill.Invert");
  m.define(R"(
def forward(self, x):
    return 1.0 - x
)");
  return m;
}

torch::jit::Module Sharpen() {
  torch::jit::Module m("framemill.Sharpen");
  torch::Tensor k =
      torch::tensor({0.f, -1.f, 0.f, -1.f, 5.f, -1.f, 0.f, -1.f, 0.f}).view({1, 1, 3, 3});
  m.register_parameter("weight", k.repeat({3, 1, 1, 1}), /*is_buffer=*/false);
  m.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight, None, [1, 1], [1, 1], [1, 1], 3)
    return torch.clamp(y, 0.0, 1.0)
)");
  return m;
}

torch::jit::Module Upscale2x() {
  torch::jit::Module m("framemill.Upscale2x");
  // Output channel c*4+k copies input channel c: pixel_shuffle then spreads the four copies over
  // a 2x2 block.
  torch::Tensor w = torch::zeros({12, 3, 3, 3});
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 4; ++k) w[c * 4 + k][c][1][1] = 1.0f;
  }
  m.register_parameter("weight", w, false);
  m.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight, None, [1, 1], [1, 1], [1, 1], 1)
    return torch.pixel_shuffle(y, 2)
)");
  return m;
}

// Registers NAME_w (a 3x3 convolution from `in` to `out` channels, He-initialised from torch's
// seeded generator) and NAME_b (zeros) on `m`.
void AddConv(torch::jit::Module& m, const std::string& name, int in, int out) {
  double scale = std::sqrt(2.0 / (in * 9));
  m.register_parameter(name + "_w", torch::randn({out, in, 3, 3}) * scale, false);
  m.register_parameter(name + "_b", torch::zeros({out}), false);
}

torch::jit::Module Heavy() {
  torch::jit::Module m("framemill.Heavy");
  torch::manual_seed(0);
  auto conv = [&](const std::string& name, int in, int out) { AddConv(m, name, in, out); };
  conv("head", 3, kHeavyWidth);
  for (int i = 0; i < kHeavyLayers; ++i) conv("body" + std::to_string(i), kHeavyWidth, kHeavyWidth);
  conv("tail", kHeavyWidth, 3);
  std::string src = "def forward(self, x):\n";
  src += "    y = torch.relu(torch.conv2d(x, self.head_w, self.head_b, [1, 1], [1, 1]))\n";
  for (int i = 0; i < kHeavyLayers; ++i) {
    std::string n = "self.body" + std::to_string(i);
    src += "    y = torch.relu(torch.conv2d(y, " + n + "_w, " + n + "_b, [1, 1], [1, 1]))\n";
  }
  src += "    y = torch.conv2d(y, self.tail_w, self.tail_b, [1, 1], [1, 1])\n";
  src += "    return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)\n";
  m.define(src);
  return m;
}

// A residual restoration network of realistic size (the shape of EDSR-style restoration and
// the trunk of most upscalers): a head convolution, kRestoreBlocks blocks of conv-ReLU-conv with a
// scaled skip, a tail convolution and a global skip. 16 hidden 64->64 3x3 convolutions: about
// 2.4 TFLOP per 1080p frame (2 x 64 x 64 x 9 multiply-adds per pixel each). Random (seeded)
// weights; the output stays close to the input.
torch::jit::Module Restore() {
  torch::jit::Module m("framemill.Restore");
  torch::manual_seed(1);
  auto conv = [&](const std::string& name, int in, int out) { AddConv(m, name, in, out); };
  conv("head", 3, kRestoreWidth);
  for (int i = 0; i < kRestoreBlocks; ++i) {
    conv("block" + std::to_string(i) + "_a", kRestoreWidth, kRestoreWidth);
    conv("block" + std::to_string(i) + "_b", kRestoreWidth, kRestoreWidth);
  }
  conv("tail", kRestoreWidth, 3);
  std::string src = "def forward(self, x):\n";
  src += "    y = torch.conv2d(x, self.head_w, self.head_b, [1, 1], [1, 1])\n";
  for (int i = 0; i < kRestoreBlocks; ++i) {
    std::string a = "self.block" + std::to_string(i) + "_a", b = "self.block" + std::to_string(i) + "_b";
    src += "    r = torch.relu(torch.conv2d(y, " + a + "_w, " + a + "_b, [1, 1], [1, 1]))\n";
    src += "    y = y + 0.1 * torch.conv2d(r, " + b + "_w, " + b + "_b, [1, 1], [1, 1])\n";
  }
  src += "    y = torch.conv2d(y, self.tail_w, self.tail_b, [1, 1], [1, 1])\n";
  src += "    return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)\n";
  m.define(src);
  return m;
}

}  // namespace

Status SaveModule(torch::jit::Module& module, const std::string& path) {
  try {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    module.save(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      return Status(StatusCode::kIo, "cannot rename " + tmp + " to " + path);
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "cannot write a model to " + path + ": " + e.what());
  }
  return Status::Ok();
}

std::vector<std::string> ExampleModelNames() {
  return {"identity", "invert", "sharpen", "upscale2x", "heavy", "restore"};
}

Status ExportExampleModel(const std::string& name, const std::string& path) {
  try {
    torch::jit::Module m;
    if (name == "identity") {
      m = Identity();
    } else if (name == "invert") {
      m = Invert();
    } else if (name == "sharpen") {
      m = Sharpen();
    } else if (name == "upscale2x") {
      m = Upscale2x();
    } else if (name == "heavy") {
      m = Heavy();
    } else if (name == "restore") {
      m = Restore();
    } else {
      std::string names;
      for (const std::string& n : ExampleModelNames()) names += (names.empty() ? "" : ", ") + n;
      return Status(StatusCode::kInvalidJob,
                    "unknown example model \"" + name + "\" (known: " + names + ")");
    }
    return SaveModule(m, path);
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "cannot write model " + name + " to " + path + ": " + e.what());
  }
}

}  // namespace framemill
