// LogSetKnobs (common/env_knobs.h), apart from the table and its reader: it needs the logger,
// which the parsers' fuzz build (tests/fuzz/) links without.
#include <string>

#include "common/env_knobs.h"
#include "common/log_lines.h"

namespace framemill {

void LogSetKnobs(KnobReader reader) {
  size_t count = 0;
  const EnvKnobInfo* table = EnvKnobTable(&count);
  for (size_t i = 0; i < count; ++i) {
    const EnvKnobInfo& k = table[i];
    const std::optional<std::string>& v = Knob(k.knob);
    if (k.reader != reader || !v) continue;
    const std::string line = std::string("environment: ") + k.name + "=" + *v + " (" +
                             Name(k.kind) + ": " + k.meaning + ")";
    // A setting is what the operator meant (and FRAMEMILL_CONFIG is set for every command a
    // user types): at debug level. A diagnosis or a test switch changes what the program does.
    if (k.kind == KnobKind::kSetting) {
      LogDebug(line);
    } else {
      LogInfo(line);
    }
  }
}

}  // namespace framemill
