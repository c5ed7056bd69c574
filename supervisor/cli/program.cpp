// framemill: the product's supervisor program (supervisor/cli/framemill_main.h), with no test
// hooks.
#include "supervisor/cli/framemill_main.h"

int main(int argc, char** argv) {
  framemill::SupervisorHooks none;
  return framemill::FramemillMain(argc, argv, none);
}
