#!/usr/bin/env bash
# Starts a one-node Slurm on this machine for the tests (Debian's slurm-wlm and munge;
# run as root): munged, slurmctld and slurmd with a configuration of their own under
# DIR (TaskPlugin=task/none, ProctrackType=proctrack/linuxproc: no cgroups needed),
# on free ports. Prints the path to give as SLURM_CONF once the node is idle.
#   tests/slurm/start.sh DIR        stop with: tests/slurm/stop.sh DIR
set -euo pipefail
dir=$(readlink -f "${1:?usage: start.sh DIR}")
for c in munged slurmctld slurmd sbatch; do
  command -v "$c" >/dev/null || { echo "start.sh: $c not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
done
[[ $(id -u) -eq 0 ]] || { echo "start.sh: slurmd runs jobs as their users: run as root" >&2; exit 3; }
mkdir -p "$dir"/{state,spool,log,run}
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
cat > "$dir/slurm.conf" <<CONF
ClusterName=svar2test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# munge: one daemon for the machine (its socket is the standard one).
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown -R munge: /run/munge /var/log/munge /var/lib/munge /etc/munge 2>/dev/null || true
  runuser -u munge -- /usr/sbin/munged
fi
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 300); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  [[ $state == idle* ]] && { echo "$SLURM_CONF"; exit 0; }
  sleep 0.2
done
echo "start.sh: the node did not become idle (state '${state:-}'); logs in $dir/log" >&2
exit 1
