#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for hone's tests: munged, slurmctld and slurmd on
# loopback, every file (key, sockets, state, logs, slurm.conf) in one folder, no systemd, no root
# configuration touched.
#   cluster.sh start DIR   starts it (about 5 s) and prints `export SLURM_CONF=DIR/slurm.conf`
#   cluster.sh stop DIR    stops it and cancels whatever is left
#   cluster.sh check       exit 0 when the packages are here, 77 (skip) with the enabling command if not
# Ports: HONE_SLURM_PORT (default: a free pair found from 16817 up).
set -euo pipefail

need() {
  local missing=()
  for t in munged slurmctld slurmd sbatch squeue scontrol scancel; do
    command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "SKIP: Slurm is not installed (missing: ${missing[*]}); scripts/install-deps.sh installs slurm-wlm and munge"
    return 77
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: slurmd launches jobs as root only; run the Slurm tests as root (or against your cluster: docs/SLURM.md)"
    return 77
  fi
}

free_port() {
  python3 - "$1" <<'PY'
import socket, sys
p = int(sys.argv[1])
while True:
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p); break
    p += 2
PY
}

PATH="$PATH:/usr/sbin:/sbin"
cmd=${1:-}
case "$cmd" in
check)
  need
  ;;
start)
  need
  dir=$(mkdir -p "$2" && cd "$2" && pwd)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge" "$dir/log"
  chmod 700 "$dir/munge"
  # munged wants a key only its user can read, in a folder nobody else can write.
  [ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
  port=${HONE_SLURM_PORT:-$(free_port 16817)}
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  cat > "$dir/slurm.conf" <<CONF
ClusterName=hone-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0,default_queue_depth=100
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -c -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF" -N "$host"
  for _ in $(seq 100); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "export SLURM_CONF=$SLURM_CONF"
      exit 0
    fi
    sleep 0.2
  done
  echo "cluster.sh: the node did not come up; logs in $dir/log" >&2
  tail -5 "$dir/log/"*.log >&2 || true
  exit 1
  ;;
stop)
  dir=$(cd "$2" && pwd)
  export SLURM_CONF="$dir/slurm.conf"
  scancel --quiet --user="$(id -un)" 2>/dev/null || true
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    if [ -f "$dir/$f" ]; then kill "$(cat "$dir/$f")" 2>/dev/null || true; fi
  done
  sleep 0.5
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    if [ -f "$dir/$f" ]; then kill -9 "$(cat "$dir/$f")" 2>/dev/null || true; rm -f "$dir/$f"; fi
  done
  ;;
*)
  echo "usage: cluster.sh start DIR | stop DIR | check" >&2
  exit 2
  ;;
esac
