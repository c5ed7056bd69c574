// A mistyped command named, with the command meant (as git and clap do): `framemill sumbit`
// answers "'sumbit' is not a framemill command; did you mean 'submit'?" instead of CLI11's
// "A subcommand is required". Looked for before parsing, from the parser's own commands, so it
// knows exactly the commands the binary accepts, nested ones (`model exprot`) included.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace framemill {

// The edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between
// two words.
int EditDistance(const std::string& a, const std::string& b);

// The known words closest to `word` that are near enough to be a typo of it (at most 2 edits, and
// fewer than half its letters; or `word` is the start of exactly one of them), best first.
std::vector<std::string> ClosestWords(const std::string& word,
                                      const std::vector<std::string>& known);

// When args (argv without the program's name) name a command `app` does not have where a
// command must stand, the message for it (with the command meant, when one is near); else "".
// Options are skipped; those of `app` that take a value (--config FILE) skip their value too.
std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace framemill
