#!/bin/bash
# Stop everything scripts/slurm-up.sh started (no systemd). Safe to run when nothing is running.
set -u
[ "$(id -u)" = 0 ] || { echo "slurm-down.sh: must run as root" >&2; exit 1; }

waitgone() { for _ in $(seq 1 50); do pgrep -x "$1" >/dev/null || return 0; sleep 0.2; done; return 1; }

if pgrep -x slurmctld >/dev/null; then
  scontrol shutdown >/dev/null 2>&1   # stops slurmctld and every slurmd
fi
waitgone slurmctld
# A slurmd left without a controller: stop it by its pid file.
if pgrep -x slurmd >/dev/null && [ -f /run/slurmd.pid ]; then kill "$(cat /run/slurmd.pid)" 2>/dev/null; fi
waitgone slurmd
if [ -f /run/slurmdbd.pid ]; then kill "$(cat /run/slurmdbd.pid)" 2>/dev/null; fi
waitgone slurmdbd
if pgrep -x mariadbd >/dev/null && [ -x /etc/init.d/mariadb ]; then /etc/init.d/mariadb stop >/dev/null 2>&1; fi
if pgrep -x munged >/dev/null; then su -s /bin/sh munge -c "/usr/sbin/munged --stop" 2>/dev/null; fi
waitgone munged
# Stale pid files make a later `apt-get purge slurmctld` fail (its prerm tries scancel).
rm -f /run/slurmctld.pid /run/slurmd.pid /run/slurmdbd.pid
rm -f "${LOCALBENCH_SLURM_MARKER:-/run/localbench-slurm-up}"   # the tests stop using this cluster

left=0
for n in slurmctld slurmd slurmdbd munged mariadbd; do   # one name each: pgrep -x ignores long alternations
  pgrep -a -x "$n" && left=1
done
if [ $left = 0 ]; then echo "slurm-down: all slurm/munge/mariadb daemons stopped"; else exit 1; fi
