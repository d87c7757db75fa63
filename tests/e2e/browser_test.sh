#!/usr/bin/env bash
# Browser tests of `hone report` and `hone serve` (tests/browser/check.mjs): a 3-agent comparison on
# two apps with hostile text in the store, reported and opened in Debian's chromium; then a live run
# watched on the dashboard. Screenshots go to ARTIFACTS (default: build/test-artifacts/browser).
# Skipped (exit 77) where chromium, node or the npm packages are missing: scripts/install-deps.sh
# installs them.
#   tests/e2e/browser_test.sh HONE SRC [ARTIFACTS]
HONE=$1
SRC=$2
ARTIFACTS=${3:-$(dirname "$HONE")/../../test-artifacts/browser}
source "$SRC/tests/e2e/lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
for need in "$CHROMIUM" "$(command -v node)" "$SRC/tests/browser/node_modules/playwright-core/package.json"; do
  if [ ! -e "$need" ]; then
    echo "SKIPPED: ${need:-node} is missing; scripts/install-deps.sh installs chromium, node and the npm packages"
    exit 77
  fi
done
export CHROMIUM

# Hostile text: a start file named like markup, holding a script in a comment.
HOSTILE="$TMP/h<img src=x onerror=window.__pwned=1>.map"
{ cat "$SRC/examples/mappers/circuit.map"
  echo "# </pre></td></table><script>window.__pwned=1</script><img src=x onerror=window.__pwned=1>"; } >"$HOSTILE"

# ---- report: guided, ensemble and random on circuit and stencil, and a hostile run ----
DB=$TMP/compare.db
for app in circuit stencil; do
  for agent in guided ensemble random; do
    check "tune-$app-$agent" 0 "$HONE" tune --app "$app" --agent "$agent" --iterations 12 --seed 2 --db "$DB" \
      --out "$TMP/best.map"
  done
done
check tune-hostile 0 "$HONE" tune --app circuit --agent guided --iterations 6 --start "$HOSTILE" --db "$DB" \
  --out "$TMP/best.map"
check report 0 "$HONE" report --db "$DB" -o "$TMP/report.html"
expect_out report "(7 runs)"
check report-in-browser 0 node "$SRC/tests/browser/check.mjs" report "$HONE" "$DB" "$TMP/report.html" "$ARTIFACTS"
cat "$TMP/out"
check report-has-no-script 1 grep -q "<script" "$TMP/report.html"
check plot-svg 0 "$HONE" plot 1 2 3 --db "$DB" -o "$TMP/curve.svg"
check plot-svg-points 0 grep -q 'data-run="3"' "$TMP/curve.svg"
check plot-png 0 "$HONE" plot 4 --db "$DB" -o "$TMP/curve.png"
check plot-png-is-png 0 bash -c "head -c 8 '$TMP/curve.png' | od -c | grep -q 'P   N   G'"
check plot-odd-path 0 "$HONE" plot 1 --db "$DB" -o "$TMP/new dir/a b \$(touch pwned).png"
check plot-odd-path-literal 0 test -s "$TMP/new dir/a b \$(touch pwned).png"
check plot-odd-path-no-injection 1 test -e pwned
check plot-bad-extension 2 "$HONE" plot 1 --db "$DB" -o "$TMP/curve.gif"
check plot-no-such-run 2 "$HONE" plot 99 --db "$DB" -o "$TMP/curve.svg"
expect_err plot-no-such-run "no run 99"
check report-over-the-store 2 "$HONE" report --db "$DB" -o "$DB"

# ---- dashboard: a live run with a slow command evaluator, watched while it goes on ----
cat >"$TMP/app.sh" <<'SH'
#!/bin/sh
sleep 0.5
sum=$(cksum <"$1" | cut -d' ' -f1)
echo "elapsed time: $((1000 + sum % 997)) s"
SH
chmod +x "$TMP/app.sh"
LIVE=$TMP/live.db
"$HONE" tune --app circuit --agent ensemble --iterations 8 --db "$LIVE" --out "$TMP/b.map" >/dev/null 2>&1
"$HONE" tune --app circuit --agent guided --iterations 60 --seed 5 --start "$HOSTILE" --evaluator command \
  --run "$TMP/app.sh {policy}" --metric 'elapsed time: ([0-9]+)' --workdir "$TMP/work" --db "$LIVE" \
  --out "$TMP/live.map" >"$TMP/tune.log" 2>&1 &
TUNE=$!
"$HONE" serve --db "$LIVE" --port 0 --poll-ms 300 >"$TMP/serve.log" 2>&1 &
SERVE=$!
url=""
for _ in $(seq 100); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$TMP/serve.log" | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
check serve-started 0 test -n "$url"
check serve-api 0 bash -c "python3 -c \"import json,urllib.request; json.load(urllib.request.urlopen('${url}api/runs'))\""
check serve-404 0 bash -c "python3 -c \"
import urllib.request, urllib.error
try:
    urllib.request.urlopen('${url}api/runs/99')
except urllib.error.HTTPError as e:
    raise SystemExit(0 if e.code == 404 else 1)
raise SystemExit(1)\""
check dashboard-in-browser 0 node "$SRC/tests/browser/check.mjs" dashboard "$HONE" "$LIVE" "$url" "$ARTIFACTS"
cat "$TMP/out"
wait "$TUNE"
check tune-live-finished 0 test $? -eq 0
kill -INT "$SERVE"
wait "$SERVE"
check serve-stops-on-sigint 0 test $? -eq 0
check serve-said-so 0 grep -q "stopped serving" "$TMP/serve.log"
check serve-missing-store 2 "$HONE" serve --db "$TMP/none.db" --port 0

echo "browser: $pass passed, $fail failed (screenshots in $ARTIFACTS)"
[ "$fail" -eq 0 ]
