#include "supervisor/cli/command_typo.h"

#include <algorithm>
#include <cstddef>

#include <CLI/CLI.hpp>

namespace framemill {
namespace {

std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    out.push_back(sub);
  }
  return out;
}

// Does option `name` (--config, or --config=FILE) of `app` take a value from the next argument?
bool TakesNextValue(const CLI::App& app, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a flag
    for (const std::string& n : opt->get_lnames()) {
      if (arg == "--" + n) return true;
    }
    for (const std::string& n : opt->get_snames()) {
      if (arg == "-" + n) return true;
    }
  }
  return false;
}

}  // namespace

int EditDistance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::vector<std::string> ClosestWords(const std::string& word,
                                      const std::vector<std::string>& known) {
  std::vector<std::pair<int, std::string>> near;
  std::vector<std::string> starting;
  for (const std::string& k : known) {
    const int dist = EditDistance(word, k);
    if (dist <= 2 && 2 * dist < static_cast<int>(word.size())) near.emplace_back(dist, k);
    if (!word.empty() && k.compare(0, word.size(), word) == 0) starting.push_back(k);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [dist, k] : near) out.push_back(k);
  if (out.empty() && starting.size() == 1) out.push_back(starting[0]);
  return out;
}

std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::string path = app.get_name();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return "";
    if (!arg.empty() && arg[0] == '-') {
      // A value option of this command or of the top (fallthrough: --config anywhere).
      if (TakesNextValue(*at, arg) || TakesNextValue(app, arg)) ++i;
      continue;
    }
    const std::vector<const CLI::App*> subs = Subcommands(*at);
    if (subs.empty()) return "";  // a command's own arguments: CLI11 checks them
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const CLI::App* s : subs) {
      names.push_back(s->get_name());
      if (s->get_name() == arg) next = s;
    }
    if (next == nullptr) {
      // `framemill model` takes only its subcommands; `framemill run FILE` and the like take
      // arguments of their own, which are no commands.
      if (at != &app && at->get_require_subcommand_min() == 0) return "";
      std::string msg = "'" + arg + "' is not a " + path + " command";
      std::vector<std::string> meant = ClosestWords(arg, names);
      if (!meant.empty()) {
        // The command as typed after `framemill`: "submit", or "model export".
        const std::string prefix = at == &app ? "" : path.substr(app.get_name().size() + 1) + " ";
        msg += "; did you mean '" + prefix + meant[0] + "'?";
        if (meant.size() > 1) {
          msg += " (or";
          for (size_t k = 1; k < meant.size() && k < 3; ++k) msg += " '" + prefix + meant[k] + "'";
          msg += ")";
        }
      } else {
        msg += ". Commands:";
        for (const std::string& n : names) msg += " " + n;
      }
      return msg;
    }
    at = next;
    path += " " + arg;
  }
  return "";
}

}  // namespace framemill
