#!/usr/bin/env bash
# The locks named in the types (common/mutex.h) are checked: every source file of the build that
# includes common/mutex.h is compiled by clang++ -fsyntax-only with -Werror=thread-safety, with
# the build's own defines and include directories (compile_commands.json), so a guarded field
# touched without its lock, or a REQUIRES function called without it, fails the test.
#
# thread_safety.sh SOURCE_DIR BUILD_DIR CLANGXX [JOBS]
# Exits 77 (skipped) where CLANGXX is missing.
set -euo pipefail

source_dir=$(realpath "$1")
build_dir=$(realpath "$2")
clangxx=${3:-}
jobs=${4:-2}

if [[ -z $clangxx ]] || ! command -v "$clangxx" >/dev/null; then
  echo "thread_safety: no clang++ (${clangxx:-none given}); skipped"
  exit 77
fi
commands=$build_dir/compile_commands.json
if [[ ! -f $commands ]]; then
  echo "thread_safety: $commands missing (CMAKE_EXPORT_COMPILE_COMMANDS is off?)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The build's compile commands, file by file. CMake writes each entry's "directory", "command"
# and "file" on lines of their own, with JSON's escapes of '\' and '"' alone: undone by dropping
# each escaping backslash.
sed -n 's/^ *"\(directory\|command\|file\)": "\(.*\)",\{0,1\}$/\1\t\2/p' "$commands" |
  sed 's/\\\(.\)/\1/g' >"$work/entries"
declare -A dir_of=() command_of=()
while IFS=$'\t' read -r key value; do
  case $key in
    directory) directory=$value ;;
    command) command=$value ;;
    file)
      if [[ $value == "$source_dir"/*.cpp && -z ${command_of[$value]:-} ]]; then
        dir_of[$value]=$directory
        command_of[$value]=$command
      fi
      ;;
  esac
done <"$work/entries"
mapfile -t files < <(printf '%s\n' "${!command_of[@]}" | sort |
  xargs grep -l '^#include "common/mutex.h"' || true)

count=0
for file in "${files[@]}"; do
  # The compiler's arguments less the compiler, its output, its warnings (-Werror of the build's
  # compiler could fail on clang's own others) and the file.
  eval "args=(${command_of[$file]})"
  kept=()
  skip_next=0
  for arg in "${args[@]:1}"; do
    if ((skip_next)); then skip_next=0; continue; fi
    case $arg in
      -o | -MF | -MT | -MQ) skip_next=1 ;;
      -c | -MD | -MMD | -W* | "$file") ;;
      *) kept+=("$arg") ;;
    esac
  done
  count=$((count + 1))
  {
    printf 'cd %q && ' "${dir_of[$file]}"
    printf '%q ' "$clangxx" -fsyntax-only -Qunused-arguments -Wno-unknown-warning-option \
      -Wthread-safety -Werror=thread-safety "${kept[@]}" "$file"
    printf '>%q 2>&1 || echo %q >>%q\n' "$work/$count.log" "$count $file" "$work/failed"
  } >"$work/$count.sh"
done

if ((count == 0)); then
  echo "thread_safety: no source file in $commands includes common/mutex.h" >&2
  exit 1
fi
printf '%s\n' "$work"/*.sh | xargs -P "$jobs" -n 1 bash
if [[ -f $work/failed ]]; then
  while read -r n file; do
    echo "== $file" >&2
    cat "$work/$n.log" >&2
  done <"$work/failed"
  echo "thread_safety: $(wc -l <"$work/failed") of $count files fail the analysis" >&2
  exit 1
fi
echo "thread_safety: $count files checked"
