"""CPU seconds (user + system) of a process tree and of a database's PostgreSQL backends.

Usage: _proc_cpu.py ROOT_PID [DATABASE_URL]
Prints one JSON line: {"cluster_cpu_s", "cluster_by_pid": {pid: s}, "pg_backend_cpu_s"}.
A process's own time plus the time of its children that ended and were waited for
(recycled workers), so nothing that ran under ROOT_PID is missed or counted twice.
PostgreSQL backends: those connected to the database now (run this before the cluster stops:
a backend's time is lost once its connection closes). Linux /proc only.
"""

from __future__ import annotations

import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime + cutime + cstime) / TICK


def tree_cpu(root: int) -> tuple[float, dict[str, float]]:
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            got = _stat(int(name))
            if got:
                parents[int(name)], cpu[int(name)] = got
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in members and pid not in members:
                members.add(pid)
                grew = True
    # without setproctitle every cluster process has the same command line: list by pid,
    # largest first (the worker, then the pusher and the monitor)
    by_pid = {str(pid): round(cpu.get(pid, 0.0), 2)
              for pid in sorted(members, key=lambda pid: -cpu.get(pid, 0.0))}
    return sum(cpu.get(pid, 0.0) for pid in members), by_pid


def backend_cpu(url: str) -> float | None:
    if not url.startswith("postgres"):
        return None
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        pids = [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name])]
    total = 0.0
    for pid in pids:
        got = _stat(pid)
        total += got[1] if got else 0.0
    return total


if __name__ == "__main__":
    total, by_pid = tree_cpu(int(sys.argv[1]))
    pg = backend_cpu(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps({"cluster_cpu_s": round(total, 2), "cluster_by_pid": by_pid,
                      "pg_backend_cpu_s": None if pg is None else round(pg, 2)}))
