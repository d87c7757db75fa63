#!/usr/bin/env bash
# Compiles every example mapper (and the kitchen-sink policy) with `hone
# compile`, then type-checks each generated mapper with
#   $CXX -std=c++17 -Wall -Wextra -Werror -fsyntax-only
# against either the test-only declaration header (mode decl) or a real
# Legion (mode real; its include folders are system includes, so only hone's
# code is held to -Werror). Exit 77 (skipped) in mode real without Legion.
# APP: one example mapper's name (or kitchen_sink), or "all".
# Usage: compile_check.sh HONE SRC OUTDIR CXX decl|real APP [INCLUDE_DIR...]
set -uo pipefail
HONE=$1 SRC=$2 OUT=$3 CXX=$4 MODE=$5 ONLY=$6
shift 6
if [ "$MODE" = real ] && [ $# -eq 0 ]; then
  echo "skipped: no Legion given (configure with -DHONE_LEGION_INCLUDE_DIRS='<legion>/runtime;<folder of legion_defines.h>')"
  exit 77
fi
includes=()
for d in "$@"; do
  if [ "$MODE" = real ]; then includes+=(-isystem "$d"); else includes+=(-I "$d"); fi
done
mkdir -p "$OUT"
fail=0 pass=0
for src in "$SRC"/examples/mappers/*.map "$SRC"/tests/legion/kitchen_sink.map; do
  app=$(basename "$src" .map)
  [ "$ONLY" = all ] || [ "$ONLY" = "$app" ] || continue
  if ! "$HONE" compile "$src" -o "$OUT/${app}_mapper.cc" 2>"$OUT/${app}.compile.log"; then
    echo "FAIL $app: hone compile"; cat "$OUT/${app}.compile.log"; fail=$((fail + 1)); continue
  fi
  for variant in "" "-DHONE_USE_LOGGING_WRAPPER=1"; do
    if "$CXX" -std=c++17 -Wall -Wextra -Werror -fsyntax-only $variant "${includes[@]}" -I "$OUT" \
        "$OUT/${app}_mapper.cc" 2>"$OUT/${app}.cxx.log"; then
      pass=$((pass + 1))
    else
      echo "FAIL $app ($MODE ${variant:-default}):"; head -40 "$OUT/${app}.cxx.log"; fail=$((fail + 1))
    fi
  done
done
echo "legion compile check ($MODE, $ONLY): $pass passed, $fail failed"
[ "$pass" -gt 0 ] && [ "$fail" -eq 0 ] # a name that matches nothing fails
