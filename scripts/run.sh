#!/usr/bin/env bash
# README command 1: installs what is needed, builds hone, and runs its main
# job on built-in defaults. For now (until `hone tune` lands): check every
# example mapper, then show where the circuit mapper places its pieces on a
# machine of 2 nodes x 4 GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh default
HONE=build/src/cli/hone
echo "== hone check examples/mappers/*.map"
"$HONE" check examples/mappers/*.map
echo
echo "== hone eval examples/mappers/circuit.map --machine nodes=2,gpus=4,cpus=8 --task calculate_new_currents --space 8 --all-points"
"$HONE" eval examples/mappers/circuit.map --machine nodes=2,gpus=4,cpus=8 \
  --task calculate_new_currents --space 8 --all-points
echo
echo "== hone simulate examples/mappers/circuit.map --app circuit (the paper's 4-GPU node)"
"$HONE" simulate examples/mappers/circuit.map --app circuit
