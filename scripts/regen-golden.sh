#!/usr/bin/env bash
# Regenerates the golden files under tests/golden/ from the current hone
# binary. Golden files are never edited by hand: change the code, run this,
# review the diff, commit both.
set -euo pipefail
cd "$(dirname "$0")/.."
HONE=${HONE:-build/src/cli/hone}
if [ ! -x "$HONE" ]; then
  echo "regen-golden: $HONE not found; build first (scripts/build.sh)" >&2
  exit 2
fi
apps=()
for m in examples/mappers/*.map; do apps+=("$(basename "$m" .map)"); done
mkdir -p tests/golden/tokens tests/golden/ast tests/golden/fmt
for app in "${apps[@]}"; do
  "$HONE" dump --emit=tokens "examples/mappers/$app.map" > "tests/golden/tokens/$app.txt"
  "$HONE" dump --emit=ast "examples/mappers/$app.map" > "tests/golden/ast/$app.txt"
done
"$HONE" fmt tests/golden/fmt/messy.map > tests/golden/fmt/messy.formatted.map
# Generated Legion mappers (".golden" keeps them out of builds and code scans).
mkdir -p tests/golden/legion
for app in "${apps[@]}"; do
  "$HONE" compile "examples/mappers/$app.map" > "tests/golden/legion/${app}_mapper.cc.golden"
done
# The simulator's contract (the profile AutoGuide and the agents read): simulate --json of every expert mapper.
mkdir -p tests/golden/simulate
for app in "${apps[@]}"; do
  "$HONE" simulate "examples/mappers/$app.map" --app "$app" --json > "tests/golden/simulate/$app.json"
done
echo "regen-golden: wrote $(( ${#apps[@]} * 4 + 1 )) files"
