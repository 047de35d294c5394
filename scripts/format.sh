#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the project's .clang-format (Debian's
# clang-format 14: scripts/setup-deps.sh). Only tracked files of gguf/, kernels/, net/, engine/,
# tools/, tests/, bench/ and examples/ (never build trees, node_modules or fuzz corpora).
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; lists the files that would change and exits 1 if any
#   scripts/format.sh [--check] FILE...   only those files
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
formatter=${CLANG_FORMAT:-clang-format}
command -v "$formatter" >/dev/null || { echo "format.sh: $formatter not found (scripts/setup-deps.sh installs it)" >&2; exit 2; }
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- 'gguf/*.cpp' 'gguf/*.h' 'kernels/*.cpp' 'kernels/*.h' 'net/*.cpp' 'net/*.h' \
    'engine/*.cpp' 'engine/*.h' 'tools/*.cpp' 'tools/*.h' 'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' \
    'examples/*.cpp' 'examples/*.h' | grep -v -e '/node_modules/' -e '^tests/fuzz_corpus/')
fi
if ((check)); then
  changed=0
  for f in "${files[@]}"; do
    if ! "$formatter" --style=file "$f" | cmp -s - "$f"; then
      echo "$f"
      changed=$((changed + 1))
    fi
  done
  if ((changed)); then
    echo "format.sh: $changed of ${#files[@]} files are not formatted (run scripts/format.sh)" >&2
    exit 1
  fi
  echo "format.sh: all ${#files[@]} files are formatted" >&2
else
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$formatter" --style=file -i
fi
