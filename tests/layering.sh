#!/usr/bin/env bash
# Checks that includes run one way: common/ below supervisor/ and worker/, which never include
# each other (and none of them includes tests/); inside supervisor/, each folder includes only
# itself and the folders before it in this order (lowest first), as supervisor/README.md explains:
#   process media faces plan workers engines report job spool cluster service cli
# and inside worker/ likewise, in this order, as worker/README.md explains; the files directly in
# worker/ (the process itself: main, its loop, telemetry) are above every folder:
#   sandbox faces model model_import batch
# Prints every include that breaks the order and exits 1; 0 when there is none.
set -uo pipefail
cd "$(dirname "$0")/.."
supervisor_order=(process media faces plan workers engines report job spool cluster service cli)
worker_order=(sandbox faces model model_import batch)
bad=0
complain() { echo "layering: $1"; bad=1; }

while IFS= read -r line; do
  complain "common/ includes a higher layer: $line"
done < <(grep -HnE '#include "(supervisor|worker)/' common/*.h common/*.cpp)
while IFS= read -r line; do
  complain "worker/ includes supervisor/: $line"
done < <(grep -rHnE '#include "supervisor/' worker)
while IFS= read -r line; do
  complain "supervisor/ includes worker/: $line"
done < <(grep -rHnE '#include "worker/' supervisor)
# The tests' faults reach the programs through seams (worker/worker_hooks.h,
# supervisor/job/supervisor_hooks.h), never an include.
while IFS= read -r line; do
  complain "the product includes tests/: $line"
done < <(grep -rHnE '#include "tests/' common supervisor worker)

# check_folders ROOT FOLDER...: each ROOT/FOLDER/ includes only itself and the folders before it,
# and no header directly in ROOT/.
check_folders() {
  local root=$1 dir folder mine other theirs file lineno text
  shift
  local order=("$@")
  rank() {
    local i
    for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done
    echo -1
  }
  for dir in "$root"/*/; do
    folder=$(basename "$dir")
    mine=$(rank "$folder")
    if [ "$mine" -lt 0 ]; then
      complain "$root/$folder/ is not in the order in tests/layering.sh"
      continue
    fi
    while IFS=: read -r file lineno text; do
      other=$(sed -nE "s|.*#include \"$root/([a-z_]+)/.*|\\1|p" <<<"$text")
      theirs=$(rank "$other")
      if [ "$theirs" -lt 0 ] || [ "$theirs" -gt "$mine" ]; then
        complain "$file:$lineno: $root/$folder/ may not include $root/$other/"
      fi
    done < <(grep -rHnE --include="*.h" --include="*.cpp" "#include \"$root/[a-z_]+/" "$dir")
    while IFS=: read -r file lineno text; do
      complain "$file:$lineno: a $root/ header outside the folders: $text"
    done < <(grep -rHnE --include="*.h" --include="*.cpp" "#include \"$root/[a-z_]+\\.h\"" "$dir")
  done
}
check_folders supervisor "${supervisor_order[@]}"
check_folders worker "${worker_order[@]}"

stray=$(find supervisor -maxdepth 1 -type f ! -name README.md)
[ -z "$stray" ] || complain "files directly in supervisor/ (each belongs in a folder): $stray"
[ "$bad" -eq 0 ] && echo "layering: every include runs one way"
exit "$bad"
