#!/usr/bin/env bash
# cmake --install puts the binary and share/hone/{models,rules,prompts,catalogue,examples}
# under a prefix; the installed hone finds its data beside itself, also after the prefix is
# moved elsewhere, and HONE_DATA_DIR / per-kind overrides take precedence.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$1
SRC=$2
HONE=unused
source "$(dirname "$0")/lib.sh"

check install 0 cmake --install "$BUILD" --prefix "$TMP/prefix"
mv "$TMP/prefix" "$TMP/moved"
H="$TMP/moved/bin/hone"
check installed-version 0 "$H" --version
check paths 0 "$H" paths --json
python3 - "$TMP/out" "$TMP/moved" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL paths: not the installed data"; }
import json, sys
d, root = json.load(open(sys.argv[1])), sys.argv[2]
for kind in ["models", "rules", "prompts", "catalogue", "examples/mappers", "examples/kernels"]:
    assert d[kind]["used"] == f"{root}/share/hone/{kind}", (kind, d[kind])
PY
# The installed data does the work: models, expert mappers, rules, the catalogue.
check installed-simulate 0 "$H" simulate "$TMP/moved/share/hone/examples/mappers/circuit.map" --app circuit
expect_out installed-simulate "status: ok"
check installed-tune 0 "$H" tune --app stencil --iterations 2 --db "$TMP/i.db" --out "$TMP/i.map" --json
expect_out installed-tune "moved/share/hone/examples/mappers/stencil.map"
cp -r "$TMP/moved/share/hone/examples/kernels" "$TMP/kernels"
check installed-kernel-profile 0 "$H" kernel profile "$TMP/kernels/dot" --json
expect_out installed-kernel-profile '"transformations"'
# Overrides: HONE_DATA_DIR for every kind, HONE_MODELS for one.
mkdir -p "$TMP/data/models"
cp -r "$TMP/moved/share/hone/models/." "$TMP/data/models/"
check data-dir 0 env HONE_DATA_DIR="$TMP/data" "$H" paths
expect_out data-dir "$TMP/data/models"
expect_out data-dir "$TMP/moved/share/hone/rules" # a kind HONE_DATA_DIR lacks comes from the next place
check models-override 0 env HONE_MODELS="$TMP/data/models" "$H" paths
expect_out models-override "overridden: HONE_MODELS=$TMP/data/models"
check no-rules 2 env HONE_RULES="$TMP/nowhere" "$H" tune --app circuit --iterations 1 --db "$TMP/r.db"
expect_err no-rules "cannot read the rules folder $TMP/nowhere"

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
