// doctest for tests that include LibTorch: include this instead of <doctest/doctest.h>, first.
// LibTorch's c10 logging (glog's, or c10/util/logging_is_not_google_glog.h) defines CHECK and
// CHECK_EQ ... that abort on failure and count nothing; doctest defines the same names, and
// whichever comes last wins, silently: with doctest first, a failed CHECK kills the whole test
// binary instead of failing one case. Here c10's header comes first, its macros are dropped, and
// doctest's stand; c10's include guard keeps them from coming back.
#pragma once

#include <c10/util/Logging.h>
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE

#include <doctest/doctest.h>
