# Helpers of the end-to-end tests: a temporary folder, checks that count.
# Sourced by the e2e scripts after HONE and SRC (and PART, for the split ones) are set.
TMP=$(mktemp -d)
mkdir -p "$TMP/gen"
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

check() { # name, expected exit code, command...
  local name=$1 want=$2
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $rc, wanted $want"
    sed 's/^/  out: /' "$TMP/out" | head -20
    sed 's/^/  err: /' "$TMP/err" | head -20
  fi
}
expect_out() { # name, fixed string that stdout must contain
  if grep -qF -- "$2" "$TMP/out"; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $1: stdout lacks '$2'"
    sed 's/^/  out: /' "$TMP/out" | head -20
  fi
}
expect_err() {
  if grep -qF -- "$2" "$TMP/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $1: stderr lacks '$2'"
    sed 's/^/  err: /' "$TMP/err" | head -20
  fi
}

part() { # whether the section of part $1 runs: a script given a part runs that part only
  [ "${PART:-all}" = all ] || [ "${PART:-all}" = "$1" ]
}
