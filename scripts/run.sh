#!/usr/bin/env bash
# README command 1: installs what is needed, builds hone, and runs its main
# job on built-in defaults: tune the circuit mapper with the guided agent on
# the performance model of the paper's 4-GPU node, starting from the expert
# mapper, and show the result; then tune a real kernel (the example suite's
# matmul, built, validated and timed on this machine) with the guided agent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh default
HONE=build/src/cli/hone
mkdir -p runs
echo "== hone check examples/mappers/*.map"
"$HONE" check examples/mappers/*.map
echo
echo "== hone tune --app circuit --agent guided --iterations 10 --db runs/hone.db --out runs/circuit-best.map"
"$HONE" tune --app circuit --agent guided --iterations 10 --db runs/hone.db --out runs/circuit-best.map
echo
echo "== hone simulate runs/circuit-best.map --app circuit (the best mapper found)"
"$HONE" simulate runs/circuit-best.map --app circuit
echo
echo "== hone tune --kernel examples/kernels/matmul --agent guided --iterations 8 --db runs/kernels.db --out runs/matmul-best"
"$HONE" tune --kernel examples/kernels/matmul --agent guided --iterations 8 --db runs/kernels.db --out runs/matmul-best
echo
echo "== hone report (open them in a browser; hone serve --db runs/hone.db follows runs live)"
"$HONE" report --db runs/hone.db -o runs/report.html
"$HONE" report --db runs/kernels.db -o runs/kernels-report.html
