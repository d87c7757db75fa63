#!/usr/bin/env bash
# Chaos: a 300-evaluation tuning run with a real command per evaluation is
# killed with SIGKILL at 30 random moments (the first while the reference is
# measured, most while a command runs) and resumed after each; the store it
# ends with must equal an uninterrupted run's (the same candidates, statuses
# and scores in the same order), and no command may be left running.
# Usage: chaos_test.sh HONE_BINARY SOURCE_DIR [EVALUATIONS] [KILLS]
set -uo pipefail
HONE=$1
SRC=$2
EVALS=${3:-300}
KILLS=${4:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
expect_eq() { # name, got, wanted
  if [ "$2" == "$3" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $1: got '$2', wanted '$3'"
  fi
}

# The application: a deterministic time from the mapper's text, after a short wait (so that kills land
# while it runs).
cat >"$TMP/chaos-app.sh" <<'SH'
#!/bin/sh
sleep 0.03
sum=$(cksum <"$1" | cut -d' ' -f1)
echo "elapsed time: $((1000 + sum % 997)) s"
SH
chmod +x "$TMP/chaos-app.sh"
# The run's options; a store's own work folder and best file follow its name.
RUN=(tune --app circuit --agent ensemble --seed 3 --iterations "$EVALS" --evaluator command
  --run "$TMP/chaos-app.sh {policy}" --metric 'elapsed time: ([0-9]+)')
for_db() { echo --workdir "$TMP/work-$1" --db "$TMP/$1.db" --out "$TMP/best-$1.map"; }
trail() { # db: each step's hash, status and score
  "$HONE" show 1 --db "$1" --json | python3 -c "
import json, sys
j = json.load(sys.stdin)
for s in j['trajectory']:
    print(s['hash'], s['status'], round(s['score'], 9))"
}

# shellcheck disable=SC2046
check uninterrupted 0 "$HONE" "${RUN[@]}" $(for_db ref) --json
trail "$TMP/ref.db" >"$TMP/ref.trail"

# The chaos run: kill -9 at random moments, resume after each.
python3 -c "import random; random.seed(11); print(' '.join(str(round(random.uniform(0.1, 0.9), 2)) for _ in range($KILLS)))" \
  >"$TMP/delays"
read -r -a delays <"$TMP/delays"
delays[0]=0.05 # the first lands while the reference is measured
started=0
midrun=0
first=1
run_status() { # the chaos run's status, "none" before it exists
  "$HONE" runs --db "$TMP/chaos.db" --json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin); print(r[0]['status'] if r else 'none')" 2>/dev/null
}
for d in "${delays[@]}"; do
  if [ "$started" -eq 0 ]; then
    # shellcheck disable=SC2046
    "$HONE" "${RUN[@]}" $(for_db chaos) >/dev/null 2>"$TMP/chaos.err" &
  else
    "$HONE" resume 1 --db "$TMP/chaos.db" >/dev/null 2>"$TMP/chaos.err" &
  fi
  pid=$! # hone itself: what kill -9 must hit (a function or subshell here would leave hone running)
  # Once the first kill has landed in the start-up, a run not yet created is waited for before the
  # random delay: on a loaded machine (the sanitizer build beside other tests) start-up alone can
  # outlast every delay, and no kill would land in the middle of the work.
  if [ "$started" -eq 0 ] && [ "$first" -eq 0 ]; then
    for _ in $(seq 600); do
      kill -0 "$pid" 2>/dev/null || break
      [ "$(run_status)" = running ] && break
      sleep 0.1
    done
  fi
  sleep "$d"
  first=0
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # Killed before the run was created (while starting up): it is started again, not resumed.
  status=$(run_status)
  [ -n "$status" ] && [ "$status" != none ] && started=1
  [ "$status" = running ] && midrun=$((midrun + 1)) # the kill landed while it worked
done
if [ "$started" -eq 1 ]; then
  check chaos-finish 0 "$HONE" resume 1 --db "$TMP/chaos.db" --json
else
  # shellcheck disable=SC2046
  check chaos-finish 0 "$HONE" "${RUN[@]}" $(for_db chaos) --json
fi
trail "$TMP/chaos.db" >"$TMP/chaos.trail"
if diff -q "$TMP/ref.trail" "$TMP/chaos.trail" >/dev/null; then pass=$((pass + 1)); else
  fail=$((fail + 1))
  echo "FAIL chaos-equals-uninterrupted:"
  diff "$TMP/ref.trail" "$TMP/chaos.trail" | head -10
fi
expect_eq chaos-steps "$(wc -l <"$TMP/chaos.trail" | tr -d ' ')" "$EVALS"
expect_eq chaos-status "$("$HONE" runs --db "$TMP/chaos.db" --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['status'])")" finished
# Most kills landed in the middle of the work (the rest after it had finished).
expect_eq kills-mid-run "$([ "$midrun" -ge $((KILLS / 2)) ] && echo yes || echo "only $midrun")" yes
# No command outlived the hone that started it.
sleep 0.2
expect_eq no-orphans "$(pgrep -f "$TMP/chaos-app.sh" | wc -l | tr -d ' ')" 0

echo "chaos e2e: $pass passed, $fail failed ($KILLS kills over $EVALS evaluations)"
[ "$fail" -eq 0 ]
