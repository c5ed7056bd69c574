#include <doctest/doctest.h>

#include "supervisor/media/media_probe.h"

using framemill::ParseRational;

TEST_CASE("frame rates parse as exact rationals") {
  auto r = ParseRational("30000/1001");
  CHECK(r.num == 30000);
  CHECK(r.den == 1001);
  CHECK(r.value() == doctest::Approx(29.97).epsilon(0.001));
  CHECK(ParseRational("25").num == 25);
  CHECK(ParseRational("25").den == 1);
  CHECK(ParseRational("0/0").num == 0);
  CHECK(ParseRational("garbage").num == 0);
  CHECK(ParseRational("30/1").ToString() == "30/1");
}
