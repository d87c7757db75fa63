#!/usr/bin/env bash
# The prepared GPU check: on a machine with an NVIDIA GPU, for each CUDA example
# (examples/kernels/cuda), the static profile (ptxas, the occupancy on the GPU's own
# architecture, and Nsight Compute's report when ncu is installed), `hone kernel
# check` (reference times and noise), and `hone tune --kernel` with the guided agent
# and with the ensemble; then one table: the reference's time, each run's best
# speedup (validated variants only), validated/evaluated, and the finding behind
# the best. Meant to finish within 8 minutes on 16 cores from a fresh checkout.
#   bench/gpu.sh [--hone BIN] [--iterations N] [--examples "matmul reduction stencil"] [--write]
# --hone: a hone binary already built (else scripts/build.sh default builds one).
# --write: put the table into docs/RESULTS.md (section "CUDA on a GPU") with the date and the GPU.
# Exit 77 (skipped) when nvidia-smi lists no GPU or nvcc is missing; exit 3 when a GPU step fails
# (the table so far and the reason are printed). A benchmark, not a test: times are the GPU's.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
SRC=$PWD
hone="" iterations=10 examples="" write=0
while [ $# -gt 0 ]; do
  case "$1" in
    --hone) hone=$2; shift ;;
    --iterations) iterations=$2; shift ;;
    --examples) examples=$2; shift ;;
    --write) write=1 ;;
    *) echo "usage: bench/gpu.sh [--hone BIN] [--iterations N] [--examples \"a b\"] [--write]" >&2; exit 2 ;;
  esac
  shift
done
case "$hone" in ''|/*) ;; *) hone=$caller/$hone ;; esac
case "$iterations" in ''|*[!0-9]*) echo "bench/gpu.sh: --iterations wants a whole number, not '$iterations'" >&2; exit 2 ;; esac
export PATH="$PATH:/usr/local/cuda/bin"

# 1. A GPU, as nvidia-smi lists them ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)"), and its architecture.
if ! command -v nvidia-smi >/dev/null || ! gpus=$(nvidia-smi -L 2>/dev/null) || ! grep -q '^GPU [0-9]' <<<"$gpus"; then
  echo "skipped: no NVIDIA GPU here (nvidia-smi is missing or lists none)"
  exit 77
fi
if ! command -v nvcc >/dev/null; then
  echo "skipped: nvcc not found (install the CUDA toolkit or put its bin/ on PATH)"
  exit 77
fi
gpu=$(grep -m1 '^GPU [0-9]' <<<"$gpus" | sed -E 's/^GPU [0-9]+: //; s/ \(UUID.*//')
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
case "$cc" in ''|*[!0-9]*) arch="" ;; *) arch="sm_$cc" ;; esac
echo "== GPU: $gpu${arch:+ ($arch)}"

# 2. hone.
start=$(date +%s)
if [ -z "$hone" ]; then
  echo "== building hone (scripts/build.sh default)"
  ./scripts/build.sh default >/dev/null
  hone=$SRC/build/src/cli/hone
fi
[ -x "$hone" ] || { echo "bench/gpu.sh: $hone is not an executable hone" >&2; exit 2; }
[ -n "$examples" ] || examples=$(for m in examples/kernels/cuda/*/hone.toml; do basename "$(dirname "$m")"; done | tr '\n' ' ')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=()
failed=""
for e in $examples; do
  dir=$work/$e
  [ -f "examples/kernels/cuda/$e/hone.toml" ] || { echo "bench/gpu.sh: no CUDA example '$e'" >&2; exit 2; }
  cp -r "examples/kernels/cuda/$e" "$dir"
  # The static occupancy for this GPU's architecture, when hone knows it (else the manifest's).
  cp "$dir/hone.toml" "$work/$e-hone.toml"
  if [ -n "$arch" ]; then
    python3 - "$dir/hone.toml" "$arch" <<'PY'
import re, sys
path, arch = sys.argv[1:3]
text = open(path).read()
if re.search(r'(?m)^archs\s*=', text):
    text = re.sub(r'(?m)^archs\s*=.*$', f'archs = ["{arch}"]', text)
else:
    text += f'\n[gpu]\narchs = ["{arch}"]\n'
open(path, "w").write(text)
PY
  fi
  echo "== $e: static profile (ptxas, occupancy)"
  if ! "$hone" kernel profile "$dir" > "$work/$e-profile.txt" 2>&1 &&
     grep -q "not an architecture hone knows" "$work/$e-profile.txt"; then
    echo "   (hone has no table for $arch: the manifest's architectures instead)"
    cp "$work/$e-hone.toml" "$dir/hone.toml"
    "$hone" kernel profile "$dir" > "$work/$e-profile.txt" 2>&1 || true
  fi
  if ! grep -q '^occupancy' "$work/$e-profile.txt"; then
    sed -n 1,20p "$work/$e-profile.txt"
    echo "bench/gpu.sh: hone kernel profile failed on $e" >&2
    exit 1
  fi
  sed -n '/^occupancy/,/^$/p' "$work/$e-profile.txt"
  binding=$(grep -m1 'binding limit:' "$work/$e-profile.txt" | sed -E 's/.*binding limit: ([^;]*);.*/\1/' || true)

  echo "== $e: hone kernel check (the first step that needs the GPU)"
  if ! "$hone" kernel check "$dir" --json > "$work/$e-check.json" 2> "$work/$e-check.err"; then
    reason=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("; ".join(d.get("problems", []))[:600])' \
      "$work/$e-check.json" 2>/dev/null || head -c 600 "$work/$e-check.err")
    failed="$e: hone kernel check failed: $reason"
    break
  fi
  ref=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timing"]; print(f"{t[\"median_s\"]:.4g} s +-{100*t[\"noise\"]:.1f}%")' "$work/$e-check.json")
  if command -v ncu >/dev/null; then
    exe=$dir/.hone/check/prog
    if [ -x "$exe" ] && (cd "$dir" && timeout 300 ncu --csv --page raw "$exe" 1 > "$work/$e-ncu.csv" 2>/dev/null); then
      "$hone" kernel profile "$dir" --ncu "$work/$e-ncu.csv" > "$work/$e-profile-ncu.txt" 2>&1 &&
        sed -n '/^findings/,/^$/p' "$work/$e-profile-ncu.txt" || true
    else
      echo "   (ncu could not profile $e; the static diagnostics stand)"
    fi
  fi
  for agent in guided ensemble; do
    echo "== $e: hone tune --kernel --agent $agent --iterations $iterations"
    if ! "$hone" tune --kernel "$dir" --agent "$agent" --iterations "$iterations" --seed 1 --db "$work/$e.db" \
         --out "$work/$e-$agent" --json > "$work/$e-$agent.json" 2> "$work/$e-$agent.err"; then
      failed="$e: hone tune --agent $agent failed: $(tail -c 600 "$work/$e-$agent.err")"
      break 2
    fi
  done
  rows+=("$(python3 - "$work/$e.db" "$e" "$ref" "${binding:--}" <<'PY'
import sqlite3, sys
db, name, ref, binding = sys.argv[1:5]
c = sqlite3.connect(db)
cells = []
for rid, agent in c.execute("SELECT id, agent FROM runs ORDER BY id"):
    rows = c.execute("SELECT e.status, e.score, c.rationale FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                     "WHERE e.run_id = ? ORDER BY e.sequence", (rid,)).fetchall()
    ok = [r for r in rows if r[0] == "ok"]
    best = max(ok, key=lambda r: r[1]) if ok else None
    why = (best[2].split("for: ", 1)[1] if best and "for: " in best[2] else (best[2] if best else "-"))
    why = why.replace("|", "/").replace("\n", " ")[:90]
    cells.append(f"{best[1]:.2f}x | {len(ok)}/{len(rows)} | {why}" if best else f"- | 0/{len(rows)} | -")
print(f"| {name} | {ref} | {binding} | " + " | ".join(cells) + " |")
PY
)")
done

elapsed=$(( $(date +%s) - start ))
table="| example | reference (check) | static occupancy binds | guided@$iterations best | validated/evaluated | finding behind it | ensemble@$iterations best | validated/evaluated | finding behind it |
|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]+"${rows[@]}"}"; do table+=$'\n'"$r"; done
echo
echo "GPU: $gpu${arch:+ ($arch)}; $(date -u +%Y-%m-%d); ${elapsed} s"
echo "$table"
if [ -n "$failed" ]; then
  echo
  echo "GPU step failed: $failed"
  exit 3
fi
if [ "$write" = 1 ]; then
  python3 - docs/RESULTS.md "$gpu${arch:+ ($arch)}" "$(date -u +%Y-%m-%d)" "$elapsed" "$table" <<'PY'
import re, sys
path, gpu, date, elapsed, table = sys.argv[1:6]
text = open(path).read()
section = (f"## CUDA on a GPU\n\nbench/gpu.sh on {gpu}, {date} ({elapsed} s, including the build): "
           f"speedups over the unmodified example, validated variants only.\n\n{table}\n")
if "## CUDA on a GPU" in text:
    text = re.sub(r"## CUDA on a GPU\n.*?(?=\n## |\Z)", section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text)
PY
  echo "wrote docs/RESULTS.md"
fi
