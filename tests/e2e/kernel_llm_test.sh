#!/usr/bin/env bash
# End-to-end tests of the kernel domain's LLM code agent (`hone tune --kernel
# DIR --agent llm`) against the scripted OpenAI-compatible server on
# 127.0.0.1 (fake_llm.py), on the suite's transpose kernel (timed by a region
# it reports, so that an edited timer can be tried): a correct faster kernel
# accepted and measured, a reply that does not compile repaired from the
# compiler's errors, a wrong result rejected by validation, the reward hacks
# (cached results, constant output, an edited timer, an edit of a protected
# file, a diff that does not apply, a whitespace-only change) each caught with
# its reason, evidence alignment, replay from the cache with the server gone,
# token and money budgets, the two-agent mode, and the corpus export.
# Usage: kernel_llm_test.sh HONE_BINARY SOURCE_DIR [all|agent|replay|modes]
set -uo pipefail
HONE=$1
SRC=$2
PART=${3:-all}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/llm_lib.sh"
export HONE_LLM_API_KEY=sk-e2e-kernel-1717

# The project: the suite's transpose, reporting the time of its loop nest (region timing).
mkdir -p "$TMP/kernels"
cp "$SRC/examples/kernels/common.h" "$TMP/kernels/"
cp -r "$SRC/examples/kernels/transpose" "$TMP/kernels/"
P="$TMP/kernels/transpose"
python3 - "$P" "$TMP" <<'PY'
import json, sys
p, tmp = sys.argv[1], sys.argv[2]
src = open(p + "/transpose.c").read()
src = src.replace('#include "../common.h"\n', '#include "../common.h"\n#include <time.h>\n')
timer_start = "  struct timespec t0, t1;\n  clock_gettime(CLOCK_MONOTONIC, &t0);\n"
timer_end = ("  clock_gettime(CLOCK_MONOTONIC, &t1);\n"
             '  printf("HONE_TIME %.6f\\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));\n')
loop = "  for (int r = 0; r < REPS; ++r) {"
assert loop in src and '  hk_print("B",' in src
src = src.replace(loop, timer_start + loop).replace('  hk_print("B",', timer_end + '  hk_print("B",')
open(p + "/transpose.c", "w").write(src)
m = open(p + "/hone.toml").read()
assert 'mode = "process"' in m and "max_repeats = 10" in m
# Region timing; three timed runs a variant are plenty for what these tests check (and keep them short).
open(p + "/hone.toml", "w").write(m.replace('mode = "process"', 'mode = "region"').replace("max_repeats = 10", "max_repeats = 3"))

def reply(files=None, diff="", transformation="loop-tiling", addresses=("D1",), why="", knobs=()):
    return json.dumps({"transformation": transformation, "addresses": list(addresses),
                       "files": [{"path": k, "content": v} for k, v in (files or {}).items()],
                       "diff": diff, "knobs": [{"name": k, "value": v} for k, v in knobs], "rationale": why})

def edit(old, new, text=src):
    assert old in text, old
    return text.replace(old, new)

# A correct and faster kernel: the nest tiled by 32 in the code (the TILE knob stays 1), and only the
# last repetition computed (each one overwrites all of B). Tiling alone gains from nothing to 1.5x on a
# two-core VM, too little to be sure of; a fifth of the repetitions (the first one pays B's page
# faults) measured 0.11 s against 0.23 s by hand.
tiled = src
for old, new in [("ii += TILE", "ii += 32"), ("jj += TILE", "jj += 32"), ("i < ii + TILE", "i < ii + 32"),
                 ("j < jj + TILE", "j < jj + 32"), (loop, "  for (int r = REPS - 1; r < REPS; ++r) {")]:
    tiled = edit(old, new, tiled)
broken = edit("B[j][i] = A[i][j] + (double)r;", "B[j][i] = A[i][j] + (double)r", tiled)
wrong = edit("B[j][i] = A[i][j] + (double)r;", "B[i][j] = A[i][j] + (double)r;", tiled)
bad_diff = ("--- a/transpose.c\n+++ b/transpose.c\n@@ -30,2 +30,2 @@\n"
            "-        for (int i = ii; i < ii + 64; ++i)\n+        for (int i = ii; i < ii + 16; ++i)\n"
            "         for (int j = jj; j < jj + 64; ++j)\n")
blank_diff = ("--- a/transpose.c\n+++ b/transpose.c\n@@ -1,2 +1,3 @@\n"
              " /* Out-of-place transpose B = A^T of an N x N matrix, repeated REPS times.\n+\n"
              "  * Knobs: TILE (square tiles; 1 is the naive element order) and the OpenMP\n")
constant = edit('  hk_print("B", &B[0][0], (long)N * N, 128);',
                '  printf("B_sum %.12e\\nB_weighted %.12e\\n", 1.5, 2.5);\n'
                '  for (int k = 0; k < 128; ++k) printf("%.12e\\n", 0.25 * k);', tiled)
# Results kept in a file between runs: read back instead of computed (the work skipped).
# The keyed one writes down, in a log of the test's, each input it served from its cache.
def cached(path_expr, log=""):
    note = ("    FILE *log = fopen(\"" + log + "\", \"a\");\n"
            "    if (log) { fprintf(log, \"%s\\n\", argc > 1 ? argv[1] : \"1\"); fclose(log); }\n") if log else ""
    return edit("  struct timespec t0, t1;",
                "  char path[512];\n  snprintf(path, sizeof path, " + path_expr + ");\n"
                "  FILE *cache = fopen(path, \"rb\");\n"
                "  if (cache && fread(B, sizeof B, 1, cache) == 1) {\n"
                "    fclose(cache);\n" + note + "    printf(\"HONE_TIME 0.000001\\n\");\n"
                "    hk_print(\"B\", &B[0][0], (long)N * N, 128);\n    return 0;\n  }\n"
                "  struct timespec t0, t1;",
                edit('  hk_print("B",', '  if ((cache = fopen(path, "wb"))) { fwrite(B, sizeof B, 1, cache); fclose(cache); }\n'
                     '  hk_print("B",', src))
unkeyed = cached('"%s", "' + tmp + '/cache-any.bin"')
keyed = cached('"%s-%s.bin", "' + tmp + '/cache-seed", argc > 1 ? argv[1] : "1"', tmp + "/keyed-hits.log")
timer = edit('printf("HONE_TIME %.6f\\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));',
             'printf("HONE_TIME %.6f\\n", 0.000001 * (double)(t1.tv_sec - t0.tv_sec));', src)
comment = edit("repeated REPS times.", "repeated REPS times (rewritten).", tiled)  # the best by then

agent = [
    {"content": reply({"transpose.c": tiled}, why="tile the nest: D1's misses"),
     "usage": [2000, 400]},
    {"content": reply({"transpose.c": broken}, why="tiles, first try"), "usage": [2000, 400]},
    {"content": reply({"transpose.c": wrong}, why="tiles, the semicolon fixed"), "usage": [2100, 400]},
    {"content": reply(diff=bad_diff, why="smaller tiles"), "usage": [2000, 100]},
    {"content": reply(diff=bad_diff, why="smaller tiles, again"), "usage": [2000, 100]},
    {"content": reply({"../common.h": "/* faster */\n"}, why="a faster generator"), "usage": [2000, 100]},
    {"content": reply({"hone.toml": "[project]\n"}, why="fewer repeats"), "usage": [2000, 100]},
    {"content": reply(diff=blank_diff, why="room to breathe"), "usage": [2000, 100]},
    {"content": reply(diff=blank_diff, why="room to breathe, again"), "usage": [2000, 100]},
    {"content": reply({"transpose.c": constant}, transformation="privatization", why="no work"), "usage": [2000, 400]},
    {"content": reply({"transpose.c": unkeyed}, transformation="memoization", why="reuse results"),
     "usage": [2000, 400]},
    {"content": reply({"transpose.c": keyed}, transformation="memoization", why="reuse results per input"),
     "usage": [2000, 400]},
    {"content": reply({"transpose.c": timer}, why="a faster clock"), "usage": [2000, 400]},
    {"content": reply({"transpose.c": comment}, why="a better comment"), "usage": [2000, 400]},
]
json.dump(agent, open(tmp + "/agent.json", "w"))
# Two-agent mode: the insight stage first (an unknown transformation, repaired), then the code.
insight = json.dumps({"choices": [{"transformation": "loop-tilling", "addresses": ["D1"], "why": "misses"}]})
insight_ok = json.dumps({"choices": [{"transformation": "loop-tiling", "addresses": ["D1"],
                                      "why": "D1: L1 misses of the column-wise writes"},
                                     {"transformation": "loop-interchange", "addresses": ["D1"], "why": "stride"}]})
json.dump([{"content": insight}, {"content": insight_ok}, {"content": reply({"transpose.c": tiled}, why="tiled")}],
          open(tmp + "/two.json", "w"))
json.dump([{"content": reply({"transpose.c": tiled}, why="one"), "usage": [900, 200]},
           {"content": reply({"transpose.c": comment}, why="two"), "usage": [900, 200]}],
          open(tmp + "/budget.json", "w"))
PY

DB="$TMP/k.db"
LLM=(--agent llm --llm-model fake-model --llm-timeout 20)
step_field() { # run, step, python expression over s (hone show RUN --step N --json)
  "$HONE" show "$1" --step "$2" --db "$DB" --json >"$TMP/step.json" 2>/dev/null
  jq_py "$TMP/step.json" "$3"
}

if part agent; then
  # perf's counters depend on the machine's load (a busy CI machine shows one core working, a finding
  # that moves the diagnostics' numbering); the rest of the profile is deterministic. perf is stubbed
  # out so that D1 is the same finding everywhere.
  mkdir -p "$TMP/bin"
  printf '#!/bin/sh\necho "perf: stubbed out by kernel_llm_test.sh" >&2\nexit 1\n' >"$TMP/bin/perf"
  chmod +x "$TMP/bin/perf"
  export PATH="$TMP/bin:$PATH"
  start_server "$TMP/agent.json"
  check tune 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --iterations 11 --repairs 1 --seed 3 \
    --db "$DB" --json
  cp "$TMP/out" "$TMP/agent-report.json"
  expect_eq requests "$(requests)" 14
  expect_eq evaluations "$(jq_py "$TMP/agent-report.json" "j['evaluations']")" 11
  # 1: the tiled kernel is accepted, measured and the best; it answers D1 where D1 points.
  expect_eq tiled-status "$(step_field 1 1 "j['result']['status']")" ok
  expect_eq tiled-faster "$(step_field 1 1 "'faster' if j['result']['score'] > 1.1 else j['result']['score']")" faster
  # (step 10 is the same code with a comment changed: either may measure best)
  expect_eq tiled-best "$(jq_py "$TMP/agent-report.json" "j['best_step'] in (1, 10)")" True
  expect_eq tiled-claim "$(step_field 1 1 "j['agent_notes']['claims']['transformation']")" loop-tiling
  expect_eq tiled-aligned "$(step_field 1 1 "j['agent_notes']['alignment']['aligned']")" True
  # Its profile names the edited file as the project's, not the folder it was built in.
  expect_eq tiled-paths "$(step_field 1 1 "'transpose.c:' in json.dumps(j['feedback']) and '.hone' not in json.dumps(j['feedback'])")" True
  expect_eq tiled-d1 "$(request_field 1 "'D1 [kernel-cache-misses] at transpose.c:' in r['body']['messages'][1]['content']")" True
  expect_eq perf-stubbed "$(request_field 1 "'[kernel-serial]' in r['body']['messages'][1]['content']")" False
  # 2: the reply that did not compile went back with the compiler's errors; the repair computes wrongly.
  expect_eq repair-errors "$(request_field 3 "'does not compile' in r['body']['messages'][-1]['content'] and 'error' in r['body']['messages'][-1]['content']")" True
  expect_eq repair-no-paths "$(request_field 3 "'$TMP' in r['body']['messages'][-1]['content']")" False
  expect_eq wrong-status "$(step_field 1 2 "j['result']['status']")" invalid
  expect_eq wrong-why "$(step_field 1 2 "'wrong result on input' in j['result']['error']")" True
  # 3-5: refused before building, each with its reason (and sent back once first).
  expect_eq diff-status "$(step_field 1 3 "j['result']['status']")" rejected
  expect_eq diff-why "$(step_field 1 3 "'does not apply' in j['result']['error'] and 'hunk 1' in j['result']['error']")" True
  expect_eq diff-repair "$(request_field 5 "'does not apply' in r['body']['messages'][-1]['content']")" True
  expect_eq protected-status "$(step_field 1 4 "j['result']['status']")" rejected
  expect_eq protected-why "$(step_field 1 4 "'hone.toml' in j['result']['error'] and 'not a file you may change' in j['result']['error']")" True
  expect_eq protected-first "$(request_field 7 "'../common.h' in r['body']['messages'][-1]['content']")" True
  expect_eq blank-status "$(step_field 1 5 "j['result']['status']")" rejected
  expect_eq blank-why "$(step_field 1 5 "'nothing but whitespace' in j['result']['error']")" True
  # 6-9: the reward hacks that build are caught by validation and hone's own timing.
  expect_eq constant-why "$(step_field 1 6 "j['result']['status'] + ': ' + str('do not change with the input' in j['result']['error'])")" "invalid: True"
  # (the later inputs get the first input's results: outputs that ignore the input)
  expect_eq unkeyed-why "$(step_field 1 7 "j['result']['status'] + ': ' + str('do not change with the input' in j['result']['error'] or 'wrong result' in j['result']['error'])")" "invalid: True"
  # Kept per input, the cache never serves a run: each validation input runs once (the variant adds
  # no parallelism to run twice), and each timed run has a fresh input of its own, which it did cache
  # (more files than the three validation inputs). Asserted on what the program saw, not on its score
  # (a loaded machine moves the reference's time by 2x).
  expect_eq keyed-served "$(cat "$TMP/keyed-hits.log" 2>/dev/null | tr '\n' ' ')" ""
  expect_eq keyed-timed "$(ls "$TMP" | grep -c '^cache-seed-' | awk '{print ($1 > 3) ? "cached" : $1}')" cached
  expect_eq timer-why "$(step_field 1 9 "j['result']['status'] + ': ' + str('not trusted' in j['result']['error'])")" "invalid: True"
  # 10: a comment edit of the best that claims D1 is measured, and counted as not aligned; every other
  # candidate that built changed main(), where D1 points.
  expect_eq comment-status "$(step_field 1 10 "j['result']['status']")" ok
  expect_eq comment-unaligned "$(step_field 1 10 "j['agent_notes']['alignment']['aligned']")" False
  expect_eq alignment "$(jq_py "$TMP/agent-report.json" "(j['evidence_alignment']['aligned'], j['evidence_alignment']['claimed'])")" "(6, 7)"
  # The validation seeds (manifest seeds + 1000 x run seed 3) are never in what the model reads:
  # matched as whole numbers, so a measured time such as 0.30021 s is not taken for a seed.
  expect_eq no-seeds "$(python3 -c "
import json, re
bodies = [json.dumps(json.loads(l)['body']) for l in open('$TMP/requests.jsonl')]
found = [m.group(0) for b in bodies for m in re.finditer(r'(?<![0-9.])300[123](?![0-9]|[.][0-9])', b)]
print(found or False)")" False
  # The best variant is written where the user can build it.
  best=$(jq_py "$TMP/agent-report.json" "j['best_file']")
  expect_eq best-file "$(grep -c 'ii += 32' "$best/transpose.c")" 1
  # The corpus: one line per evaluated candidate, valid against the documented schema.
  check corpus 0 "$HONE" export 1 --db "$DB" --corpus --out "$TMP/corpus.jsonl"
  expect_eq corpus-lines "$(wc -l <"$TMP/corpus.jsonl" | tr -d ' ')" 11
  check corpus-schema 0 python3 - "$SRC/docs/corpus.schema.json" "$TMP/corpus.jsonl" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
lines = [json.loads(l) for l in open(sys.argv[2])]
for line in lines:
    jsonschema.validate(line, schema)
tiled = lines[1]
assert tiled["transformations"] == ["loop-tiling"] and tiled["build"] == "ok" and tiled["validation"] == "passed", tiled
assert "ii += 32" in tiled["diff"] and tiled["speedup"] > 1 and tiled["tokens"]["prompt"] == 2000, tiled
assert lines[2]["build"] == "ok" and lines[2]["validation"] == "failed", lines[2]
assert lines[3]["build"] == "not built" and lines[3]["validation"] == "not run", lines[3]
assert tiled["diagnostics"] and tiled["diagnostics"][0]["rule"] == "kernel-cache-misses", tiled["diagnostics"]
PY
  stop_server
  export PATH="${PATH#"$TMP/bin:"}"
fi

if part replay; then
  # A run, then the same run replayed from its store's cache with the server gone.
  start_server "$TMP/agent.json"
  check replay-first 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --iterations 6 --repairs 1 --seed 4 \
    --db "$TMP/r.db" --json --no-profile
  stop_server
  check replay 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "http://127.0.0.1:9/v1" --iterations 6 --repairs 1 \
    --seed 4 --db "$TMP/r.db" --json --no-profile --replay
  trail() { # run: the hashes and statuses of its steps
    "$HONE" show "$1" --db "$TMP/r.db" --json | python3 -c "
import json, sys
j = json.load(sys.stdin)
print([(s['hash'], s['status']) for s in j['trajectory']])"
  }
  expect_eq replay-same "$(trail 2)" "$(trail 1)"
  expect_eq replay-cached "$(jq_py "$TMP/out" "j['tokens']['total'] > 0 and j['llm']['replay']")" True
  # kill -9 in the middle of a run, then resume: the replies it had are answered from the cache, the
  # run finishes its budget, and no candidate's program is left running.
  start_server "$TMP/agent.json"
  "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --iterations 6 --repairs 1 --seed 9 --db "$TMP/k9.db" \
    --no-profile >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 600); do [ "$(requests)" -ge 3 ] && break; sleep 0.1; done
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  check kill-resume 0 "$HONE" resume 1 --db "$TMP/k9.db" --json
  expect_eq kill-resume-budget "$(jq_py "$TMP/out" "j['evaluations']")" 6
  expect_eq kill-resume-cached "$(jq_py "$TMP/out" "j['llm_calls'] >= 3")" True
  expect_eq kill-resume-no-orphans "$(pgrep -f "$P/.hone" | wc -l | tr -d ' ')" 0
  # Budgets stop the run with the reason: tokens, then money.
  start_server "$TMP/budget.json"
  check token-budget 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --iterations 5 --seed 5 \
    --db "$TMP/b.db" --json --no-profile --token-budget 1000
  expect_eq token-stop "$(jq_py "$TMP/out" "'token budget' in j['stop_reason']")" True
  expect_eq token-requests "$(requests)" 1
  start_server "$TMP/budget.json"
  check money-budget 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --iterations 5 --seed 6 \
    --db "$TMP/b.db" --json --no-profile --money-budget 0.001 --price-prompt 1 --price-completion 1
  expect_eq money-stop "$(jq_py "$TMP/out" "'budget' in j['stop_reason'] and j['cost'] > 0")" True
  stop_server
fi

if part modes; then
  # Two agents: the insight stage chooses (its unknown transformation is sent back), the code stage writes.
  start_server "$TMP/two.json"
  check two-agent 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --llm-mode two-agent --iterations 2 \
    --seed 7 --db "$TMP/m.db" --json
  expect_eq two-requests "$(requests)" 3
  expect_eq two-insight-schema "$(request_field 1 "'choices' in json.dumps(r['body'].get('response_format', {}))")" True
  expect_eq two-did-you-mean "$(request_field 2 "'did you mean' in r['body']['messages'][-1]['content'] and 'loop-tiling' in r['body']['messages'][-1]['content']")" True
  expect_eq two-chosen "$(request_field 3 "'Apply this transformation' in r['body']['messages'][1]['content'] and '(loop-tiling)' in r['body']['messages'][1]['content']")" True
  "$HONE" show 1 --step 1 --db "$TMP/m.db" --json >"$TMP/two-step.json"
  expect_eq two-notes "$(jq_py "$TMP/two-step.json" "(j['agent_notes']['mode'], j['agent_notes']['insight']['choice']['choices'][0]['transformation'])")" "('two-agent', 'loop-tiling')"
  # The feedback levels: at "exec" the model sees no diagnostics.
  start_server "$TMP/budget.json"
  check exec-level 0 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --feedback exec --iterations 2 \
    --seed 8 --db "$TMP/m.db" --json
  expect_eq exec-hidden "$(request_field 1 "'not shown at this feedback level' in r['body']['messages'][1]['content'] and '- D1 [' not in r['body']['messages'][1]['content']")" True
  # K-shot prompts need examples the kernel domain does not have; the mapping domain has no two-agent mode.
  check kshot 2 "$HONE" tune --kernel "$P" "${LLM[@]}" --llm-url "$URL" --optimizer 5-shot --iterations 2 \
    --db "$TMP/m.db"
  expect_err kshot-why "no example kernels"
  check mapping-two 2 "$HONE" tune --app circuit "${LLM[@]}" --llm-url "$URL" --llm-mode two-agent --iterations 2 \
    --db "$TMP/m.db"
  expect_err mapping-two-why "only the single mode"
  stop_server
fi

if part prompts; then
  # A 20-step run on a program of many loop nests (about 9 KB of source): every request, the first
  # messages of which a model reads, stays within the kernel domain's budget (15000 bytes), the
  # parts that do not fit are shortened and said to be, and `hone show` reports the sizes.
  B="$TMP/big"
  mkdir -p "$B"
  python3 - "$B" <<'PY'
import json, sys
b = sys.argv[1]
parts = ["/* Many small loop nests: a program whose prompt must be kept within its budget. */",
         "#include <stdio.h>", "#include <stdlib.h>", "#define N 64", "static double a[N][N], c[N][N];", ""]
for f in range(24):
    parts += [f"static double stage{f}(double s) {{",
              "  for (int i = 0; i < N; ++i)",
              "    for (int j = 0; j < N; ++j)",
              f"      c[i][j] = a[j][i] * {f + 1}.0 + c[i][j] * 0.5 + s;",
              "  double t = 0;",
              "  for (int i = 0; i < N; ++i)",
              "    t += c[i][(i * 7) % N];",
              "  return t / N;", "}", ""]
parts += ["int main(int argc, char **argv) {",
          "  unsigned seed = argc > 1 ? (unsigned)atoi(argv[1]) : 1u;",
          "  srand(seed);",
          "  for (int i = 0; i < N; ++i)",
          "    for (int j = 0; j < N; ++j)",
          "      a[i][j] = (double)(rand() % 1000) / 1000.0;",
          "  double s = 0;"]
parts += [f"  s = stage{f}(s);" for f in range(24)]
parts += ['  printf("%.17g\\n", s);', "  for (int i = 0; i < N; i += 8)", '    printf("%.17g\\n", c[i][i]);',
          "  return 0;", "}", ""]
src = "\n".join(parts)
open(b + "/big.c", "w").write(src)
open(b + "/hone.toml", "w").write("""[project]
name = "big"
language = "c"
sources = ["big.c"]
[build]
command = "cc {cflags} {defines} {includes} {sources} -o {out}"
flags = "-O1"
[run]
command = "{exe} {seed}"
seeds = [1, 2]
[output]
source = "stdout"
tolerance = "rel"
[timing]
mode = "process"
warmup = 0
min_repeats = 2
max_repeats = 3
""")
replies = []
for k in range(1, 25):  # each a new file of the same size that rewrites every stage (a diff as long)
    text = src.replace(" * 0.5 + s;", f" * 0.5 + s; /* attempt {k} */")
    replies.append({"content": json.dumps({"transformation": "unroll", "addresses": ["D1"],
                                           "files": [{"path": "big.c", "content": text}], "diff": "",
                                           "knobs": [], "rationale": f"attempt {k}"}), "usage": [3000, 900]})
json.dump(replies, open(b + "/replies.json", "w"))
PY
  start_server "$B/replies.json"
  check prompts-run 0 "$HONE" tune --kernel "$B" "${LLM[@]}" --llm-url "$URL" --iterations 20 --repairs 0 --seed 11 \
    --db "$TMP/p.db"
  expect_eq prompts-requests "$(requests)" 19
  expect_eq prompts-within "$(python3 -c "
import json, sys
sizes = [sum(len(m['content'].encode()) for m in json.loads(l)['body']['messages'][:2]) for l in open(sys.argv[1])]
print(len(sizes) == 19 and max(sizes) <= 15000)" "$TMP/requests.jsonl")" True
  expect_eq prompts-tried "$(request_field 19 "'- 18: attempt 18 -> ' in r['body']['messages'][1]['content']")" True
  "$HONE" show 1 --db "$TMP/p.db" >"$TMP/p-show.txt"
  expect_eq prompts-show "$(grep -c '^prompts: 19 requests, the first [0-9]* bytes, the largest [0-9]* (step [0-9]*); budget 15000 bytes' "$TMP/p-show.txt")" 1
  expect_eq prompts-never-over "$(grep -c 'over it even so' "$TMP/p-show.txt")" 0
  "$HONE" show 1 --db "$TMP/p.db" --json >"$TMP/p-show.json"
  expect_eq prompts-json "$(jq_py "$TMP/p-show.json" "(j['prompts']['requests'], j['prompts']['budget_bytes'], j['prompts']['largest_bytes'] <= 15000)")" "(19, 15000, True)"
  # A budget the prompts cannot keep without shortening: shortened, said so, and kept.
  start_server "$B/replies.json"
  check prompts-tight 0 "$HONE" tune --kernel "$B" "${LLM[@]}" --llm-url "$URL" --iterations 4 --repairs 0 --seed 12 \
    --db "$TMP/p2.db" --llm-prompt-budget 12000
  "$HONE" show 1 --db "$TMP/p2.db" --json >"$TMP/p2-show.json"
  expect_eq prompts-tight-shortened "$(jq_py "$TMP/p2-show.json" "j['prompts']['shortened'] > 0 and j['prompts']['over_budget'] == 0")" True
  expect_eq prompts-tight-said "$(request_field 3 "'within its size budget' in r['body']['messages'][1]['content']")" True
  stop_server
fi

echo "kernel llm e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
