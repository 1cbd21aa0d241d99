#!/usr/bin/env python3
"""Runs a command and reports where its CPU went, thread by thread.

    scripts/thread_cpu.py [--label L] [--json] -- CMD ARGS...

Samples /proc/PID/task/*/stat every 5 ms while CMD runs, keeps each thread's last
user+system time, and takes the process's total CPU from wait4's rusage (so threads
that end between samples still count in the total). Prints one line:

    label wall_s cpu_s bound busiest busiest_s kinds

where bound = total CPU / busiest thread's CPU: Amdahl's limit on the speedup more
cores can give, whatever this machine has. A thread that ends between two samples
loses at most 5 ms of its own time, which can only lower `busiest` if it was the
busiest; kinds sums threads by name with trailing digits dropped (encode-0..15 ->
encode) as kind:count:cpu_s:max_s.
"""
import json
import os
import re
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def sample(pid, seen):
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"{base}/{tid}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # comm sits in parentheses and may hold spaces or ')'.
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        seen[tid] = (name, cpu)


def main():
    args = sys.argv[1:]
    label, as_json = None, False
    while args and args[0] != "--":
        if args[0] == "--label":
            label, args = args[1], args[2:]
        elif args[0] == "--json":
            as_json, args = True, args[1:]
        else:
            sys.exit(f"thread_cpu.py: unknown option {args[0]}")
    cmd = args[1:]
    if not cmd:
        sys.exit("usage: thread_cpu.py [--label L] [--json] -- CMD ARGS...")
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    seen = {}
    while True:
        sample(pid, seen)
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.005)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"thread_cpu.py: {' '.join(cmd)} exited {code}")
    total = usage.ru_utime + usage.ru_stime
    kinds = {}
    for name, cpu in seen.values():
        kind = re.sub(r"[-_]\d+$", "", name) or name
        n, s, m = kinds.get(kind, (0, 0.0, 0.0))
        kinds[kind] = (n + 1, s + cpu, max(m, cpu))
    busiest_name, busiest = max(seen.values(), key=lambda v: v[1], default=("-", 0.0))
    bound = total / busiest if busiest > 0 else float("inf")
    label = label or os.path.basename(cmd[0])
    if as_json:
        print(json.dumps({"label": label, "wall_s": wall, "cpu_s": total, "bound": bound,
                          "busiest": busiest_name, "busiest_s": busiest,
                          "kinds": {k: {"threads": n, "cpu_s": s, "max_s": m}
                                    for k, (n, s, m) in kinds.items()},
                          "threads": sorted([name, cpu] for name, cpu in seen.values())}))
        return
    ordered = sorted(kinds.items(), key=lambda kv: -kv[1][1])
    kind_text = " ".join(f"{k}:{n}:{s:.2f}:{m:.2f}" for k, (n, s, m) in ordered)
    print(f"{label} {wall:.2f} {total:.2f} {bound:.1f} {busiest_name} {busiest:.2f} {kind_text}")


if __name__ == "__main__":
    main()
