// doctest for test files that use LibTorch. LibTorch's c10 logging defines CHECK, CHECK_EQ, ...
// (glog's, or its own copies), which abort the process on failure; doctest defines the same
// names. Whichever header comes last wins, silently: with doctest first, a test's CHECKs are
// LibTorch's, and a failing one kills the test binary instead of being reported. This header
// includes LibTorch first, drops its macros, and then includes doctest, so CHECK is doctest's.
#pragma once

#include <torch/torch.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE

#include <doctest/doctest.h>
