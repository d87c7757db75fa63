#!/usr/bin/env bash
# bench/gpu.sh up to its first real GPU step, with a fake nvidia-smi: it names the GPU and its
# architecture, prints the static occupancy for that architecture, and stops at `hone kernel
# check` (no GPU is visible) with exit 3 and the reason; with no GPU listed it skips (77).
# Skipped (exit 77) without nvcc.
# Usage: gpu_bench_test.sh HONE_BINARY SOURCE_DIR
set -uo pipefail
HONE=$1
SRC=$2
export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v nvcc >/dev/null; then
  echo "skipped: nvcc not found (install the CUDA toolkit or add its bin/ to PATH)"
  exit 77
fi
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A machine whose nvidia-smi lists no GPU: skipped, saying why.
cat > "$fake/nvidia-smi" <<'SH'
#!/bin/sh
echo "No devices were found"
exit 6
SH
chmod +x "$fake/nvidia-smi"
out=$(PATH="$fake:$PATH" bash "$SRC/bench/gpu.sh" --hone "$HONE" 2>&1); rc=$?
[ "$rc" = 77 ] || fail "no GPU listed: expected exit 77, got $rc: $out"
grep -q "no NVIDIA GPU" <<<"$out" || fail "no GPU listed: no reason given: $out"

# One H100 listed, none visible to CUDA: the static part runs for sm_90, the check fails.
cat > "$fake/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
  *-L*) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;
  *compute_cap*) echo "9.0" ;;
  *) exit 1 ;;
esac
SH
out=$(PATH="$fake:$PATH" CUDA_VISIBLE_DEVICES="" bash "$SRC/bench/gpu.sh" --hone "$HONE" --examples matmul --iterations 2 2>&1); rc=$?
echo "$out"
[ "$rc" = 3 ] || fail "expected exit 3 at the first GPU step, got $rc"
grep -q "== GPU: NVIDIA H100 80GB HBM3 (sm_90)" <<<"$out" || fail "the GPU and its architecture are not named"
grep -q "matmul: .* on sm_90 " <<<"$out" || fail "no static occupancy for sm_90"
grep -q "binding limit:" <<<"$out" || fail "the binding limit is not printed"
grep -q "on sm_80" <<<"$out" && fail "the manifest's other architectures were not replaced by the GPU's"
grep -q "GPU step failed: matmul: hone kernel check failed: " <<<"$out" || fail "the failing GPU step is not named with its reason"
grep -q "| example | reference (check)" <<<"$out" || fail "no table header"

# Bad options are usage errors.
PATH="$fake:$PATH" bash "$SRC/bench/gpu.sh" --iterations x >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--iterations x: expected exit 2, got $rc"
echo "gpu bench script: ok"
