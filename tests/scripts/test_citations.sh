#!/usr/bin/env bash
# Comments and docs that cite a test must cite one that exists: every path tests/<dir>/<file> named in
# lib/, cuda/, apps/, emu/, cmake/, scripts/, tests/, docs/ or README.md exists, and so does every bare
# <name>_test.cpp / <name>_parity_test.cpp / <name>.sh named after "Covered by" somewhere under tests/.
# Run by ctest (args: bin dir, data dir — unused).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
fail=0
files=$(git ls-files --cached --others --exclude-standard lib cuda apps emu cmake scripts tests docs README.md 2>/dev/null ||
        find lib cuda apps emu cmake scripts tests docs README.md -type f)
while IFS=: read -r file line path; do
  path="${path%.}"
  [[ -e "$path" ]] || { echo "test_citations: $file:$line cites $path, which does not exist"; fail=1; }
done < <(grep -onE '(^|[^A-Za-z0-9_.-])tests/[a-z0-9_./-]+\.(cpp|h|sh|py)' $files 2>/dev/null |
         sed -E 's/^([^:]*:[0-9]+:)[^t]*/\1/')
while IFS=: read -r file line name; do
  [[ -n "$(find tests -name "$name" -print -quit)" ]] ||
    { echo "test_citations: $file:$line cites $name, which is nowhere under tests/"; fail=1; }
done < <(grep -onE '(^|[^A-Za-z0-9_}$])[a-z0-9][a-z0-9_]*_test\.(cpp|sh)\b' $files 2>/dev/null |
         sed -E 's/^([^:]*:[0-9]+:)[^a-z0-9]*/\1/')
(( fail == 0 )) && echo "test_citations: every cited test exists"
exit $fail
