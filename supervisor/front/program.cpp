// framemill: the product's supervisor program (supervisor/front/framemill_main.h), with no test
// hooks.
#include "supervisor/front/framemill_main.h"

int main(int argc, char** argv) {
  framemill::SupervisorHooks none;
  return framemill::FramemillMain(argc, argv, none);
}
