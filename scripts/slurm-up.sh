#!/bin/bash
# Start a single-node Slurm 22.05 cluster (Debian 12's slurm-wlm packages) on this machine, for the
# @pytest.mark.slurm tests and for trying `localbench slurm` locally. Needs root; needs no systemd.
#
#   sudo scripts/slurm-up.sh              # controller + node, no accounting (sacct disabled)
#   sudo WITH_DBD=1 scripts/slurm-up.sh   # also MariaDB + slurmdbd, so `sacct` works
#
# Idempotent: packages already installed are not reinstalled, daemons already running are kept,
# and a changed slurm.conf is applied with `scontrol reconfigure`. Stop with scripts/slurm-down.sh.
# The settings that make the tests fast are explained in docs/hpc.md (cred_expire=10 and
# bf_interval=1 bring a requeue from ~140 s down to ~12 s; kill_invalid_depend cancels a
# dependent job whose array failed instead of leaving it pending forever).
set -euo pipefail

WITH_DBD=${WITH_DBD:-0}
LOG_DIR=${SLURM_UP_LOG_DIR:-/var/log/slurm}
T0=$(date +%s.%N)
lap() { printf '[slurm-up %5.1fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" "$*"; }

[ "$(id -u)" = 0 ] || { echo "slurm-up.sh: must run as root (it installs packages and starts daemons)" >&2; exit 1; }

NODE=$(hostname -s)
if ! getent hosts "$NODE" >/dev/null; then
  echo "127.0.0.1 $NODE" >>/etc/hosts   # slurmctld must resolve its own short host name
  lap "added $NODE to /etc/hosts"
fi
# every CPU this process may use: nproc alone honours OMP_NUM_THREADS, which a test worker sets to 1
# (a node of 1 CPU cannot run a judge server and the merge job that uses it at once)
CPUS=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
# RealMemory must not exceed what slurmd detects, or the node is marked invalid.
MEM=$(( $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) * 85 / 100 ))

# Another apt or dpkg (unattended-upgrades, a provisioning script) may hold the dpkg lock: wait
# for it (up to SLURM_UP_LOCK_TIMEOUT seconds) instead of failing, and let apt wait too.
LOCK_TIMEOUT=${SLURM_UP_LOCK_TIMEOUT:-600}
dpkg_locked() { lslocks -n -o PATH 2>/dev/null | grep -qE '^/var/lib/(dpkg/lock(-frontend)?|apt/lists/lock)$'; }
wait_for_dpkg_lock() {
  local waited=0
  while dpkg_locked; do
    [ "$waited" = 0 ] && lap "waiting for the dpkg lock (another apt or dpkg is running; up to ${LOCK_TIMEOUT}s)"
    if [ "$waited" -ge "$LOCK_TIMEOUT" ]; then
      echo "slurm-up.sh: the dpkg lock is still held after ${LOCK_TIMEOUT}s (see: lslocks | grep dpkg); rerun when it is free" >&2
      exit 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  [ "$waited" = 0 ] || lap "dpkg lock free after ${waited}s"
}
apt_get() { apt-get -o DPkg::Lock::Timeout="$LOCK_TIMEOUT" "$@"; }  # apt waits too, should the lock come back

PKGS=${SLURM_UP_PKGS:-"slurmctld slurmd slurm-client munge"}
[ "$WITH_DBD" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
mkdir -p "$LOG_DIR"
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  wait_for_dpkg_lock
  if ! apt_get install -y --no-install-recommends $missing >"$LOG_DIR/slurm-up-apt.log" 2>&1; then
    apt_get update >>"$LOG_DIR/slurm-up-apt.log" 2>&1
    apt_get install -y --no-install-recommends $missing >>"$LOG_DIR/slurm-up-apt.log" 2>&1 \
      || { echo "apt-get install failed; see $LOG_DIR/slurm-up-apt.log" >&2; tail -5 "$LOG_DIR/slurm-up-apt.log" >&2; exit 1; }
  fi
  lap "installed:$missing"
fi

# munge: the package made /etc/munge/munge.key; /run/munge is normally systemd's RuntimeDirectory.
install -d -o munge -g munge -m 0755 /run/munge
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
munge -n | unmunge >/dev/null
lap "munged up"

install -d -o slurm -g slurm /var/lib/slurm/slurmctld /var/log/slurm
install -d /var/lib/slurm/slurmd

if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819"
else
  ACCT="AccountingStorageType=accounting_storage/none"
fi

CONF=$(cat <<CONF
# Written by localbench scripts/slurm-up.sh: a single-node test cluster.
ClusterName=ci
SlurmctldHost=${NODE}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=cred_expire=10
SlurmUser=slurm
SlurmdUser=root
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
${ACCT}
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
DependencyParameters=kill_invalid_depend
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=${NODE} CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
CONF
)
CHANGED=0
if [ ! -f /etc/slurm/slurm.conf ] || [ "$(cat /etc/slurm/slurm.conf)" != "$CONF" ]; then
  mkdir -p /etc/slurm
  printf '%s\n' "$CONF" >/etc/slurm/slurm.conf
  CHANGED=1
fi

if [ "$WITH_DBD" = 1 ]; then
  pgrep -x mariadbd >/dev/null || /etc/init.d/mariadb start >/dev/null
  mysql -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  lap "mariadb up"
  cat >/etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
DebugLevel=info
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
CONF
  chown slurm:slurm /etc/slurm/slurmdbd.conf
  chmod 600 /etc/slurm/slurmdbd.conf
  pgrep -x slurmdbd >/dev/null || /usr/sbin/slurmdbd
  for _ in $(seq 1 150); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
  # `add cluster` fails when the cluster exists, so only add it when it is missing.
  sacctmgr -n list cluster format=cluster | grep -qw ci || sacctmgr -i add cluster ci >/dev/null
  lap "slurmdbd up"
fi

if pgrep -x slurmctld >/dev/null && [ "$CHANGED" = 1 ]; then
  # The accounting plugin cannot change under a running controller: restart both daemons.
  scontrol shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 0.2; done
  lap "restarted daemons for the new slurm.conf"
fi
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 1 150); do
  state=$(sinfo -h -o %t 2>/dev/null || true)
  case "$state" in idle|mix|alloc) break ;; esac
  sleep 0.2
done
case "$(sinfo -h -o %t 2>/dev/null || true)" in
  idle|mix|alloc) ;;
  *) echo "slurm-up.sh: node never became idle" >&2; sinfo >&2 || true
     tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true; exit 1 ;;
esac
# The marker the Slurm tests look for: they use a cluster only when this script started it on this
# host (same controller, same node), so `make test` on a machine with another cluster submits nothing.
MARKER=${LOCALBENCH_SLURM_MARKER:-/run/localbench-slurm-up}
printf 'cluster=ci\nhost=%s\nstarted_by=scripts/slurm-up.sh\n' "$NODE" >"$MARKER"
lap "cluster ready (node $NODE, $CPUS CPUs, ${MEM} MB, accounting: $([ "$WITH_DBD" = 1 ] && echo slurmdbd || echo none))"
sinfo
