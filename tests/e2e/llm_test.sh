#!/usr/bin/env bash
# End-to-end tests of `hone tune --agent llm` against a scripted
# OpenAI-compatible server on 127.0.0.1 (fake_llm.py): every scripted fault
# survived, what hone sends, the key kept secret, token budgets, an exact
# replay from the cache with the network gone, resume from the cache, the
# optimizers and feedback levels.
# Usage: llm_test.sh HONE_BINARY SOURCE_DIR [all|faults|budgets|hostile|prompts]
set -uo pipefail
HONE=$1
SRC=$2
PART=${3:-all}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/llm_lib.sh"

# The scripted replies: improvements of the circuit expert mapper, and faults between them.
python3 - "$SRC/examples/mappers/circuit.map" "$TMP" <<'PY'
import json, sys
expert = open(sys.argv[1]).read()
tmp = sys.argv[2]
def answer(mapper, why):
    return json.dumps({"mapper": mapper, "rationale": why})
shared = expert + "Region distribute_charge rp_shared GPU FBMEM;\n"
ghost = shared + "Region distribute_charge rp_ghost GPU FBMEM;\n"
both = expert + "Region * rp_shared GPU FBMEM;\nRegion * rp_ghost GPU FBMEM;\n"
faults = [
    {"status": 429, "headers": {"Retry-After": "1"}, "body": '{"error": {"message": "rate limited"}}'},
    {"content": answer("Task * GPUU;\n", "GPUs for everything"), "usage": [1000, 100]},
    {"content": answer(shared, "distribute_charge waits on zero-copy memory"), "usage": [1200, 150]},
    {"status": 500},
    {"content": "Here is a better one:\n```dsl\n" + ghost + "```\n", "usage": [1300, 160]},
    {"hang": 4},
    {"truncate": True},
    {"content": answer(both, "every task reads the shared regions in framebuffer"), "usage": [1400, 170]},
]
json.dump(faults, open(tmp + "/faults.json", "w"))
json.dump([{"content": answer(shared, "one"), "usage": [80, 40]},
           {"content": answer(ghost, "two"), "usage": [80, 40]}], open(tmp + "/budget.json", "w"))
json.dump([{"content": answer(shared, "first")}, {"content": answer(ghost, "second")}],
          open(tmp + "/first.json", "w"))
json.dump([{"content": answer(both, "third")}, {"content": answer(both + "# four\n", "fourth")}],
          open(tmp + "/rest.json", "w"))
json.dump([{"content": answer(shared, "one")}], open(tmp + "/one.json", "w"))
PY

export HONE_LLM_API_KEY=sk-e2e-secret-4242
DB="$TMP/llm.db"
LLM=(--agent llm --llm-model fake-model --llm-timeout 2)

if part faults; then
# 1. Every fault in one run: 429 with Retry-After, a mapper that does not check (repaired), 500,
#    a fenced block instead of JSON, a reply that never comes, a cut body. Four evaluations.
start_server "$TMP/faults.json"
check llm-faults 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --llm-url "$URL" --iterations 4 --json --out "$TMP/best.map"
cp "$TMP/out" "$TMP/run1.json"
expect_eq llm-faults-evaluations "$(jq_py "$TMP/run1.json" "j['evaluations']")" 4
expect_eq llm-faults-failures "$(jq_py "$TMP/run1.json" "j['failures']")" 0
expect_eq llm-faults-better "$(jq_py "$TMP/run1.json" "j['best_score'] > 1.0")" True
expect_eq llm-faults-calls "$(jq_py "$TMP/run1.json" "j['llm_calls']")" 4
expect_eq llm-faults-tokens "$(jq_py "$TMP/run1.json" "j['tokens']['prompt'], j['tokens']['completion'], j['tokens']['total']")" \
  "4900 580 5480"
expect_eq llm-faults-stop "$(jq_py "$TMP/run1.json" "j['stop_reason']")" "budget of 4 evaluations used"
expect_eq llm-faults-requests "$(requests)" 8
expect_eq llm-faults-header "$(request_field 1 "r['authorization']")" "Bearer sk-e2e-secret-4242"
expect_eq llm-faults-schema "$(request_field 1 "r['body']['response_format']['type']")" json_schema
expect_eq llm-faults-model "$(request_field 1 "r['body']['model']")" fake-model
# The 429's Retry-After (1 s) was waited for; the 500 was retried after the backoff (0.5 s less jitter).
expect_eq llm-faults-retry-after "$(python3 -c "
import json, sys
t = [json.loads(l)['time'] for l in open(sys.argv[1])]
print(t[1] - t[0] >= 0.95, 0.3 <= t[4] - t[3] < 3)" "$TMP/requests.jsonl")" "True True"
# The first prompt carries the expert mapper and AutoGuide's feedback on it (the default level).
expect_eq llm-faults-feedback "$(request_field 1 "'Analysis (AutoGuide)' in r['body']['messages'][1]['content'] and 'Suggestion:' in r['body']['messages'][1]['content']")" True
expect_eq llm-faults-mapper-in-prompt "$(request_field 1 "'IndexTaskMap calculate_new_currents' in r['body']['messages'][1]['content']")" True
# The repair: the bad reply and hone's diagnostics went back.
expect_eq llm-faults-repair "$(request_field 3 "len(r['body']['messages']), 'unknown processor kind' in r['body']['messages'][3]['content']")" "4 True"
# Each request carries its own seed; retries resend the same one.
expect_eq llm-faults-seeds "$(request_field 1 "r['body']['seed']") $(request_field 4 "r['body']['seed']") $(request_field 6 "r['body']['seed']")" "1 2 3"
# The key appears nowhere: not in output, not in the store.
check llm-faults-show 0 "$HONE" show 1 --db "$DB" --json --trajectory
cp "$TMP/out" "$TMP/show1.json"
check llm-faults-export 0 "$HONE" export 1 --db "$DB" --jsonl
expect_out llm-faults-export '"agent_notes"'
expect_out llm-faults-export 'unknown processor kind'
check llm-faults-show-step 0 "$HONE" show 1 --step 1 --db "$DB"
expect_out llm-faults-show-step "--- conversation (trace, seed 1, 2 calls, 1 repair, 2200 prompt + 250 completion tokens"
expect_out llm-faults-show-step "unknown processor kind 'GPUU'"
expect_out llm-faults-show-step "Analysis (AutoGuide):"
check llm-faults-show-step-json 0 "$HONE" show 1 --step 1 --db "$DB" --json
expect_out llm-faults-show-step-json '"repairs": 1'
check llm-faults-show-no-step 2 "$HONE" show 1 --step 9 --db "$DB"
expect_err llm-faults-show-no-step "run 1 has no step 9 (it has steps 0 to 3)"
leaks=$(cat "$TMP/run1.json" "$TMP/show1.json" "$TMP/out" "$TMP/err" "$DB"* | grep -c "sk-e2e-secret-4242")
expect_eq llm-key-never-stored "$leaks" 0
check llm-faults-sqlite 0 python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute('SELECT SUM(prompt_tokens), SUM(completion_tokens), COUNT(*) FROM agent_notes').fetchone())
print(db.execute('SELECT prompt_tokens, completion_tokens, calls FROM run_usage WHERE run_id = 1').fetchone())
" "$DB"
expect_out llm-faults-sqlite "(4900, 580, 3)"
expect_out llm-faults-sqlite "(4900, 580, 4)"

# 2. Replay: the same run from the cache (the store), the network gone; identical steps.
stop_server
check llm-replay 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --llm-url http://127.0.0.1:9/v1 --iterations 4 --replay --json --out "$TMP/replay.map"
cp "$TMP/out" "$TMP/run2.json"
expect_eq llm-replay-run "$(jq_py "$TMP/run2.json" "j['run_id']")" 2
expect_eq llm-replay-same-best "$(jq_py "$TMP/run2.json" "j['best_score']")" "$(jq_py "$TMP/run1.json" "j['best_score']")"
expect_eq llm-replay-same-tokens "$(jq_py "$TMP/run2.json" "j['tokens']")" "$(jq_py "$TMP/run1.json" "j['tokens']")"
check llm-replay-show 0 "$HONE" show 2 --db "$DB" --json --trajectory
steps_of() { jq_py "$1" "[(s['hash'], s['status'], round(s['score'], 12), s['rationale']) for s in j['trajectory']]"; }
expect_eq llm-replay-identical "$(steps_of "$TMP/out")" "$(steps_of "$TMP/show1.json")"
check llm-replay-same-file 0 cmp <(tail -n +2 "$TMP/best.map") <(tail -n +2 "$TMP/replay.map")
# A replay that diverges (another seed) says so and keeps what it had.
check llm-replay-diverges 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --iterations 4 --replay --seed 9 --json
expect_out llm-replay-diverges '"evaluations": 1'
expect_out llm-replay-diverges 'has no response for this request'

# The same run again (same seed, same store) is answered from the cache: the server is not asked.
start_server "$TMP/one.json"
check llm-rerun-cached 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --llm-url "$URL" --iterations 4 --json
expect_eq llm-rerun-cached-requests "$(requests)" 0
expect_eq llm-rerun-cached-same "$(jq_py "$TMP/out" "j['best_score']")" "$(jq_py "$TMP/run1.json" "j['best_score']")"

fi

if part budgets; then
# 3. A wrong model name: 404, not retried, the run ends with what it had.
start_server "$TMP/one.json"
check llm-wrong-model 0 "$HONE" tune --app circuit --agent llm --llm-model no-such-model --llm-url "$URL" --db "$DB" --iterations 3 --json
expect_out llm-wrong-model '"evaluations": 1'
expect_out llm-wrong-model 'HTTP 404'
expect_out llm-wrong-model 'does not exist'
expect_eq llm-wrong-model-once "$(requests)" 1

# 4. A token budget stops the run (120 tokens per reply, budget 100: one reply).
start_server "$TMP/budget.json"
check llm-budget 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/budget.db" --llm-url "$URL" --iterations 5 --token-budget 100 --json
expect_out llm-budget '"evaluations": 2'
expect_out llm-budget 'token budget of 100 is used up'
expect_eq llm-budget-requests "$(requests)" 1
check llm-money-needs-prices 2 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/budget.db" --llm-url "$URL" --money-budget 1
expect_err llm-money-needs-prices "--money-budget needs the price of fake-model"

# 5. Resume: a run cut short (the script runs out) continues from the cache; the first
#    replies are not asked for again.
start_server "$TMP/first.json"
check llm-cut-short 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/resume.db" --llm-url "$URL" --iterations 5 --json
RUN=$(jq_py "$TMP/out" "j['run_id']")
expect_out llm-cut-short '"evaluations": 3'
start_server "$TMP/rest.json"
check llm-resume 0 "$HONE" resume "$RUN" --db "$TMP/resume.db" --llm-url "$URL" --json
expect_out llm-resume '"evaluations": 5'
expect_eq llm-resume-only-new "$(requests)" 2
expect_eq llm-resume-prompt-has-history "$(request_field 1 "'Region distribute_charge rp_ghost GPU FBMEM' in r['body']['messages'][1]['content']")" True

fi

if part hostile; then
# 5b. Hostile replies: parentheses 20,000 deep (once a crash, cached before it was checked, so that
#     every resume crashed again) and a tuple bomb (once gigabytes). Each is a failed step with its
#     reason; the run cut short resumes from the cache.
python3 - "$SRC/examples/mappers/circuit.map" "$TMP" <<'PY'
import json, sys
expert = open(sys.argv[1]).read()
deep = "Task * GPU;\nx = " + "(" * 20000 + "1" + ")" * 20000 + ";\n"
bomb = expert + "a0 = (1, 2);\n" + "".join(f"a{i} = (*a{i-1}, *a{i-1});\n" for i in range(1, 41))
answer = lambda m: json.dumps({"mapper": m, "rationale": "more"})
json.dump([{"content": answer(deep)}], open(sys.argv[2] + "/deep.json", "w"))
json.dump([{"content": answer(bomb)}], open(sys.argv[2] + "/bomb.json", "w"))
PY
start_server "$TMP/deep.json"
check llm-deep 0 "$HONE" tune --app circuit "${LLM[@]}" --repairs 0 --db "$TMP/hostile.db" --llm-url "$URL" --iterations 3 --json
expect_out llm-deep '"evaluations": 2'
RUN=$(jq_py "$TMP/out" "j['run_id']")
start_server "$TMP/bomb.json"
check llm-bomb-resume 0 "$HONE" resume "$RUN" --db "$TMP/hostile.db" --llm-url "$URL" --json
expect_out llm-bomb-resume '"evaluations": 3'
expect_eq llm-hostile-only-new "$(requests)" 1
python3 - "$TMP/hostile.db" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL llm-hostile: reasons not recorded"; }
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT status, error FROM evaluations ORDER BY sequence").fetchall()
assert len(rows) == 3, rows
assert rows[1][0] == "rejected" and "nested deeper than 200 levels" in rows[1][1], rows[1]
assert rows[2][0] != "ok" and "a tuple of more than 65536 items" in rows[2][1], rows[2]
PY
fi

if part prompts; then
# 6. Optimizers and feedback levels: what the prompt holds.
start_server "$TMP/one.json"
check llm-exec-level 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/exec.db" --llm-url "$URL" --iterations 2 --feedback exec --llm-max-tokens 500
expect_out llm-exec-level "llm: fake-model (trace), 1 calls"
expect_eq llm-max-tokens "$(request_field 1 "r['body']['max_tokens']")" 500
expect_eq llm-exec-level-prompt "$(request_field 1 "'Execution output' in r['body']['messages'][1]['content'], 'Analysis' in r['body']['messages'][1]['content']")" "True False"
start_server "$TMP/one.json"
check llm-opro 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/opro.db" --llm-url "$URL" --iterations 2 --optimizer opro
expect_eq llm-opro-prompt "$(request_field 1 "'Mappers so far' in r['body']['messages'][1]['content']")" True
start_server "$TMP/one.json"
check llm-5-shot 0 "$HONE" tune --app circuit "${LLM[@]}" --db "$TMP/shots.db" --llm-url "$URL" --iterations 1 --optimizer 5-shot --json
expect_out llm-5-shot '"evaluations": 1'
expect_eq llm-5-shot-prompt "$(request_field 1 "'### Example 5' in r['body']['messages'][1]['content'], '### Example 6' in r['body']['messages'][1]['content'], 'Execution output' in r['body']['messages'][1]['content'], 'expert mapper of circuit' in r['body']['messages'][1]['content'], '/' + 'examples/mappers' in r['body']['messages'][1]['content']")" "True False False False False"
check llm-bad-optimizer 2 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --llm-url "$URL" --optimizer tracer
expect_err llm-bad-optimizer "not one of trace, opro, K-shot"

check llm-options-without-llm 0 "$HONE" tune --app circuit --agent guided --iterations 1 --db "$TMP/guided.db" --llm-model m --optimizer opro
expect_err llm-options-without-llm "--llm-model has no effect without --agent llm"
expect_err llm-options-without-llm "--optimizer has no effect without --agent llm"
# No --agent: the domain's default (guided) does not read them either.
check llm-options-default-agent 0 "$HONE" tune --app circuit --iterations 1 --db "$TMP/default.db" --llm-model m
expect_err llm-options-default-agent "--llm-model has no effect without --agent llm"

# 7. Configuration: the key never on the command line; a config file; missing settings.
check llm-key-refused 2 "$HONE" tune --app circuit "${LLM[@]}" --db "$DB" --llm-url "$URL" --api-key sk-do-not-print-me
expect_err llm-key-refused "never takes the API key on the command line"
expect_eq llm-key-refused-not-echoed "$(grep -c sk-do-not-print-me "$TMP/err" "$TMP/out" | awk -F: '{s+=$2} END {print s}')" 0
check llm-no-model 2 "$HONE" tune --app circuit --agent llm --llm-url "$URL" --db "$DB"
expect_err llm-no-model "--llm-model NAME"
check llm-openai-needs-key 2 env -u HONE_LLM_API_KEY HOME="$TMP" "$HONE" tune --app circuit --agent llm --llm-preset openai --llm-model gpt-4o --db "$DB"
expect_err llm-openai-needs-key "needs an API key: set HONE_LLM_API_KEY"
start_server "$TMP/one.json"
printf 'url = "%s"\nmodel = "fake-model"\napi_key = "sk-from-file-77"\n' "$URL" >"$TMP/llm.toml"
chmod 600 "$TMP/llm.toml"
check llm-config-file 0 env -u HONE_LLM_API_KEY HONE_LLM_CONFIG="$TMP/llm.toml" "$HONE" tune --app circuit --agent llm --db "$TMP/file.db" --iterations 2
expect_eq llm-config-file-key "$(request_field 1 "r['authorization']")" "Bearer sk-from-file-77"
printf 'model = "fake-model"\nurll = "http://x"\n' >"$TMP/typo.toml"
check llm-config-typo 1 "$HONE" tune --app circuit --agent llm --llm-config "$TMP/typo.toml" --db "$DB"
expect_err llm-config-typo "typo.toml:2:1"
expect_err llm-config-typo "did you mean 'url'"

# 8. llm-check: one small request before a long run.
python3 - "$TMP" <<'PY'
import json, sys
json.dump([{"content": '{"ok": true, "model": "fake"}', "usage": [30, 8]}], open(sys.argv[1] + "/check.json", "w"))
json.dump([{"status": 400, "body": '{"error": {"message": "response_format json_schema is not supported"}}'},
           {"content": '{"ok": true, "model": "fake"}'}], open(sys.argv[1] + "/check-object.json", "w"))
PY
start_server "$TMP/check.json"
check llm-check 0 "$HONE" llm-check --llm-url "$URL" --llm-model fake-model
expect_out llm-check "ok: answered in"
expect_out llm-check "structured output: json_schema, 30 prompt + 8 completion tokens"
expect_out llm-check "key: HONE_LLM_API_KEY"
expect_eq llm-check-key-not-shown "$(grep -c sk-e2e-secret-4242 "$TMP/out")" 0
start_server "$TMP/check-object.json"
check llm-check-fallback 0 "$HONE" llm-check --llm-url "$URL" --llm-model fake-model --json
expect_out llm-check-fallback '"format": "json_object"'
expect_out llm-check-fallback '"json_reply": true'
check llm-check-wrong-model 1 "$HONE" llm-check --llm-url "$URL" --llm-model other --json
expect_out llm-check-wrong-model '"ok": false'
expect_out llm-check-wrong-model 'HTTP 404'
stop_server
check llm-check-down 1 "$HONE" llm-check --llm-url "$URL" --llm-model fake-model --llm-retries 0
expect_out llm-check-down "failed: cannot reach $URL/chat/completions"
check llm-check-no-model 2 "$HONE" llm-check --llm-url "$URL"
check llm-check-key-refused 2 "$HONE" llm-check --llm-url "$URL" --llm-model m --api-key sk-x

fi

echo "e2e llm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
