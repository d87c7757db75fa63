#!/usr/bin/env bash
# The real OpenTuner against hone's agents on hone's performance model, as an outside user would run
# it (bench/opentuner/hone_tuner.py: every decision of `hone space --json` an EnumParameter, each
# configuration evaluated by `hone simulate --assign`, failures reported as errors, at most N hone
# calls per run). OpenTuner comes from a source tree you provide (a git clone of
# https://github.com/jansel/opentuner; this script never downloads) and runs on Debian's
# python3-numpy, python3-sqlalchemy and python3-future (installed here if missing).
# Prints a table per app: OpenTuner at 10 and at 1000 evaluations (mean over seeds, and the best),
# hone's guided agent at 10 and the ensemble and random at 1000 (seed 1); with --write, replaces the
# table between <!-- opentuner:begin/end --> in docs/RESULTS.md.
#   bench/opentuner-compare.sh OPENTUNER_SRC [--write] [--seeds N] [--apps a,b,...] [--large N]
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-}
[ -n "$src" ] && [ -f "$src/opentuner/__init__.py" ] || {
  echo "usage: bench/opentuner-compare.sh OPENTUNER_SRC [--write] [--seeds N] [--apps a,b] [--large N]" >&2
  echo "  OPENTUNER_SRC: a clone of https://github.com/jansel/opentuner (not downloaded by this script)" >&2
  exit 2
}
src=$(cd "$src" && pwd)
shift
write=0 seeds=3 large=1000
apps=$(for m in examples/mappers/*.map; do basename "$m" .map; done | tr '\n' ',')
while [ $# -gt 0 ]; do
  case "$1" in
    --write) write=1 ;;
    --seeds) seeds=$2; shift ;;
    --apps) apps=$2; shift ;;
    --large) large=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
missing=()
for p in python3-numpy python3-sqlalchemy python3-future; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ -x build/src/cli/hone ] || ./scripts/build.sh default >/dev/null
HONE=$PWD/build/src/cli/hone
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

opentuner() { # app evaluations seed -> best score
  (cd "$work" && PYTHONPATH="$src" /usr/bin/python3 "$OLDPWD/bench/opentuner/hone_tuner.py" --hone "$HONE" \
    --app "$1" --expert "$OLDPWD/examples/mappers/$1.map" --evaluations "$2" --seed "$3" \
    --database "$work/ot-$1-$2-$3.db" 2>/dev/null | tail -1)
}
hone_best() { # app agent evaluations -> best score
  "$HONE" tune --app "$1" --agent "$2" --iterations "$3" --seed 1 --db "$work/hone.db" --out "$work/best.map" \
    --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["best_score"])'
}

{
  echo "| app | OpenTuner@10: mean (best) | OpenTuner@$large: mean (best) | OpenTuner@$large failed | hone guided@10 | hone ensemble@$large | hone random@$large |"
  echo "|---|---|---|---|---|---|---|"
  for app in ${apps//,/ }; do
    small=() big=() fails=()
    for seed in $(seq 1 "$seeds"); do
      small+=("$(opentuner "$app" 10 "$seed")")
      big+=("$(opentuner "$app" "$large" "$seed")")
    done
    python3 - "$app" "$(hone_best "$app" guided 10)" "$(hone_best "$app" ensemble "$large")" \
      "$(hone_best "$app" random "$large")" "${#small[@]}" "${small[@]}" "${big[@]}" <<'PY'
import json, sys
app, guided, ensemble, rnd, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
runs = [json.loads(x) for x in sys.argv[6:]]
small, big = runs[:n], runs[n:]
mean = lambda rs: sum(r["best_score"] for r in rs) / len(rs)
best = lambda rs: max(r["best_score"] for r in rs)
failed = sum(r["failures"] for r in big), sum(r["evaluations"] for r in big)
print(f"| {app} | {mean(small):.3f} ({best(small):.3f}) | {mean(big):.3f} ({best(big):.3f}) | "
      f"{failed[0]} of {failed[1]} | {guided:.3f} | {ensemble:.3f} | {rnd:.3f} |")
PY
  done
  echo
  echo "OpenTuner $(git -C "$src" log -1 --format=%h 2>/dev/null || echo '(no git)') with $seeds seeds; $(($(date +%s) - start)) s on $(nproc) cores, $(date -u +%Y-%m-%d), by \`bench/opentuner-compare.sh\`."
} | tee "$work/table.md"

if [ "$write" = 1 ]; then
  python3 - "$work/table.md" <<'PY'
import re, sys
table = open(sys.argv[1]).read()
path = "docs/RESULTS.md"
doc = open(path).read()
doc = re.sub(r"(<!-- opentuner:begin -->\n).*?(<!-- opentuner:end -->)", lambda m: m.group(1) + table + m.group(2),
             doc, flags=re.S)
open(path, "w").write(doc)
PY
fi
