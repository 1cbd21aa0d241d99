#!/usr/bin/env bash
# Stops the Slurm daemons tests/slurm/start.sh DIR started (munged is left running).
dir=$(readlink -f "${1:?usage: stop.sh DIR}")
for p in "$dir"/run/slurmd.pid "$dir"/run/slurmctld.pid; do
  [[ -s $p ]] && kill "$(cat "$p")" 2>/dev/null
done
exit 0
