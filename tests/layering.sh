#!/usr/bin/env bash
# Checks that includes run one way: common/ below supervisor/ and worker/, which never include
# each other (and none of them includes tests/); inside supervisor/, each folder includes only itself and the folders before it in
# this order (lowest first), as supervisor/README.md explains:
#   process media faces plan workers report job spool cluster service cli
# Prints every include that breaks the order and exits 1; 0 when there is none.
set -uo pipefail
cd "$(dirname "$0")/.."
order=(process media faces plan workers report job spool cluster service cli)
rank() {
  local i
  for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo -1
}
bad=0
complain() { echo "layering: $1"; bad=1; }

while IFS= read -r line; do
  complain "common/ includes a higher layer: $line"
done < <(grep -HnE '#include "(supervisor|worker)/' common/*.h common/*.cpp)
while IFS= read -r line; do
  complain "worker/ includes supervisor/: $line"
done < <(grep -rHnE '#include "supervisor/' worker)
# The tests' faults reach the programs through seams (worker/worker_hooks.h,
# supervisor/job/supervisor_hooks.h), never an include.
while IFS= read -r line; do
  complain "the product includes tests/: $line"
done < <(grep -rHnE '#include "tests/' common supervisor worker)

for dir in supervisor/*/; do
  folder=$(basename "$dir")
  mine=$(rank "$folder")
  [ "$mine" -ge 0 ] || { complain "supervisor/$folder/ is not in the order in tests/layering.sh"; continue; }
  while IFS=: read -r file lineno text; do
    other=$(sed -nE 's|.*#include "supervisor/([a-z_]+)/.*|\1|p' <<<"$text")
    theirs=$(rank "$other")
    if [ "$theirs" -lt 0 ] || [ "$theirs" -gt "$mine" ]; then
      complain "$file:$lineno: supervisor/$folder/ may not include supervisor/$other/"
    fi
  done < <(grep -HnE '#include "supervisor/' "$dir"*.h "$dir"*.cpp)
  while IFS=: read -r file lineno text; do
    complain "$file:$lineno: a supervisor header outside the folders: $text"
  done < <(grep -HnE '#include "supervisor/[a-z_]+\.h"' "$dir"*.h "$dir"*.cpp)
  while IFS=: read -r file lineno text; do
    complain "$file:$lineno: supervisor/ includes worker/: $text"
  done < <(grep -HnE '#include "worker/' "$dir"*.h "$dir"*.cpp)
done
stray=$(find supervisor -maxdepth 1 -type f ! -name README.md)
[ -z "$stray" ] || complain "files directly in supervisor/ (each belongs in a folder): $stray"
[ "$bad" -eq 0 ] && echo "layering: every include runs one way"
exit "$bad"
