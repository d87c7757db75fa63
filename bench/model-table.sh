#!/usr/bin/env bash
# Simulates the nine expert mappers (and mapper variants the paper discusses)
# on the shipped models and prints a Markdown table; with --write, replaces
# the table between the markers in docs/MODEL.md.
# Usage: bench/model-table.sh [--write] [path/to/hone]
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
[[ "${1:-}" == "--write" ]] && { write=1; shift; }
hone=${1:-build/src/cli/hone}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sim() { # policy app machine -> "status time throughput unit lower_bound error"
  "$hone" simulate "$1" --app "$2" --machine "$3" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d))' || true
}

row() { # label policy app machine expert_time
  python3 - "$1" "$2" "$3" "$4" "$5" "$(sim "$2" "$3" "$4")" <<'PY'
import json, sys
label, policy, app, machine, expert, raw = sys.argv[1:7]
d = json.loads(raw)
if d["status"] != "ok":
    print(f"| {app} | {label} | {machine} | failed | - | - | {d['error']} |")
else:
    rel = float(expert) / d["time_s"] if expert != "-" else 1.0
    print(f"| {app} | {label} | {machine} | {d['time_s']:.4g} s | {d['throughput']:.4g} {d['throughput_unit']} "
          f"| {rel:.2f} | lower bound {d['lower_bound_s']:.3g} s |")
PY
}

time_of() { "$hone" simulate "$1" --app "$2" --machine "$3" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["time_s"])'; }

{
  echo "| app | mapper | machine | time | throughput | vs expert | notes |"
  echo "|---|---|---|---|---|---|---|"
  for mapper in examples/mappers/*.map; do
    app=$(basename "$mapper" .map)
    for machine in p100x4 p100x4-2nodes; do
      e=$(time_of examples/mappers/$app.map $app $machine)
      row expert examples/mappers/$app.map $app $machine "$e"
    done
  done
  e=$(time_of examples/mappers/circuit.map circuit p100x4)
  sed '/^Region \* rp_shared GPU ZCMEM;/d; /^Region \* rp_ghost GPU ZCMEM;/d' examples/mappers/circuit.map > "$tmp/circuit_fb.map"
  row "all regions in FBMEM (paper's best: 1.34)" "$tmp/circuit_fb.map" circuit p100x4 "$e"
  sed 's/SOA F_order/SOA C_order/' examples/mappers/stencil.map > "$tmp/stencil_c.map"
  row "C_order (paper: fails)" "$tmp/stencil_c.map" stencil p100x4 -
  sed 's/SOA C_order/SOA F_order/' examples/mappers/cannon.map > "$tmp/cannon_f.map"
  row "F_order (paper: fails)" "$tmp/cannon_f.map" cannon p100x4 -
  sed 's/^Task \* GPU,CPU;/Task * CPU;/; /^IndexTaskMap calculate_new_currents/d' examples/mappers/circuit.map > "$tmp/circuit_cpu.map"
  row "every task on CPUs" "$tmp/circuit_cpu.map" circuit p100x4 "$e"
} > "$tmp/table.md"

if [[ $write == 1 ]]; then
  python3 - "$tmp/table.md" <<'PY'
import re, sys
table = open(sys.argv[1]).read()
path = "docs/MODEL.md"
doc = open(path).read()
doc = re.sub(r"(<!-- model:table:begin -->\n).*?(<!-- model:table:end -->)", lambda m: m.group(1) + table + m.group(2), doc, flags=re.S)
open(path, "w").write(doc)
PY
fi
cat "$tmp/table.md"
