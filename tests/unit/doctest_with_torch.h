// doctest for tests that include LibTorch: include this instead of <doctest/doctest.h>, first.
// LibTorch's c10 (c10/util/logging_is_not_google_glog.h) defines a glog-style CHECK that aborts
// on failure and counts nothing; included after doctest it silently replaces doctest's CHECK (a
// failed check then kills the whole test binary instead of failing one case). Here c10's header
// comes first, its CHECK is dropped, and doctest's stands; c10's include guard keeps it from
// coming back.
#pragma once

#include <c10/util/Logging.h>
#undef CHECK

#include <doctest/doctest.h>
