// The test binaries' main (unit, worker unit and integration): doctest's, and a run whose filters
// match no test case fails. ctest runs these binaries by case name, or by source file (the
// worker's, a process per file: tests/CMakeLists.txt), and a filter that matches nothing (a renamed
// file, a name that ctest split at a ';') would otherwise pass without running anything.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

// Set at the end of a run of test cases (not of a query such as --list-test-cases).
int g_matched = -1;

struct MatchCounter : doctest::IReporter {
  explicit MatchCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_matched = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

DOCTEST_REGISTER_LISTENER("match counter", 1, MatchCounter);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  if (g_matched == 0) {
    std::fprintf(stderr, "no test case matches the filters given\n");
    return 1;
  }
  return 0;
}
