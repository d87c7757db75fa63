#!/usr/bin/env bash
# The CUDA kernels of examples/kernels/cuda build with nvcc, and ptxas's
# resource report reaches hone's profile (registers per kernel) and its static
# occupancy on the manifests' architectures, with the limit that binds. They run
# only where a GPU is; building needs nvcc alone. Skipped (exit 77) without
# nvcc: install the CUDA toolkit, or put its bin/ on PATH.
# Usage: cuda_check.sh HONE_BINARY SOURCE_DIR
set -uo pipefail
HONE=$1
SRC=$2
export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v nvcc >/dev/null; then
  echo "skipped: nvcc not found (install the CUDA toolkit or add its bin/ to PATH)"
  exit 77
fi
fail=0
pass=0
for dir in "$SRC"/examples/kernels/cuda/*/; do
  name=$(basename "$dir")
  work=$(mktemp -d)
  cp -r "$dir"/. "$work/"
  if out=$("$HONE" kernel profile "$work" --json 2>&1) &&
     python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert "ptxas" in d["profile"]["tools"], d["profile"]["skipped"]; assert all(k["registers"] > 0 for k in d["profile"]["ptxas"]), d["profile"]["ptxas"]; occ = d["profile"]["occupancy"]; assert occ and all(o.get("limiting") and o["arch"] in ("sm_80", "sm_90") and 0 < o["occupancy"] <= 1 for o in occ), occ' "$out" &&
     "$HONE" kernel profile "$work" 2>&1 | grep -q "binding limit: "; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: $(echo "$out" | head -c 2000)"
  fi
  rm -rf "$work"
done
echo "cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
