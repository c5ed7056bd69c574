// framemill-test-shape-model OUT.pt BATCH WIDTH HEIGHT: writes a TorchScript model that returns
// its input unchanged and raises unless the input is exactly [BATCH, 3, HEIGHT, WIDTH], the
// contract of a package made for one shape (common/model_card.h fixed_*). The fixed-shape tests
// (fixed_shape_test.cpp) run it with a card saying so: the job is frame-exact only if every call,
// the worker's probe and the chunk's short last batch included, comes at that shape.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/script.h>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s OUT.pt BATCH WIDTH HEIGHT\n", argv[0]);
    return 2;
  }
  torch::jit::Module m("framemill_test.OneShape");
  m.register_attribute("batch", c10::IntType::get(), int64_t{std::atoll(argv[2])});
  m.register_attribute("width", c10::IntType::get(), int64_t{std::atoll(argv[3])});
  m.register_attribute("height", c10::IntType::get(), int64_t{std::atoll(argv[4])});
  m.define(R"(
def forward(self, x):
    assert x.size(0) == self.batch and x.size(2) == self.height and x.size(3) == self.width, "this model takes one shape only"
    return x
)");
  m.save(argv[1]);
  return 0;
}
