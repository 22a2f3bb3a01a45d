"""Wait for a drain to finish and account the CPU it took (bench/webhooks.sh).

Usage: _drain_watch.py DATABASE_URL CLUSTER_PID
Every 0.5 s: counts the events still `received` plus the queued tasks (one light query, not
a Django start-up per poll, which would compete with the cluster for CPU), and samples the
CPU seconds of the cluster's process tree and of every PostgreSQL backend of the database
(kept per backend pid, so a connection closed mid-run still counts with its last sample).
Exits 0 when nothing is left, printing one JSON line; 1 if the cluster died.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _proc_cpu import _stat, tree_cpu  # noqa: E402

LEFT_SQL = ("SELECT (SELECT count(*) FROM integrations_webhookevent WHERE status = 'received')"
            " + (SELECT count(*) FROM django_q_ormq)")


def main(url: str, cluster_pid: int) -> int:
    backends: dict[int, float] = {}
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split("sqlite:///", 1)[1], isolation_level=None)
        name = None
    else:
        import psycopg

        conn = psycopg.connect(url, autocommit=True)  # type: ignore[assignment]
        name = url.rsplit("/", 1)[1]
    cluster_cpu, by_pid = 0.0, {}
    while True:
        time.sleep(0.5)
        if _stat(cluster_pid) is None:
            print(json.dumps({"error": "cluster died"}))
            return 1
        cluster_cpu, by_pid = tree_cpu(cluster_pid)
        if name is not None:
            pids = [row[0] for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name])]
            for pid in pids:
                got = _stat(pid)
                if got:
                    backends[pid] = max(backends.get(pid, 0.0), got[1])
        left = conn.execute(LEFT_SQL).fetchone()[0]
        if left == 0:
            break
    print(json.dumps({
        "cluster_cpu_s": round(cluster_cpu, 2), "cluster_cpu_by_pid": by_pid,
        "pg_backend_cpu_s": round(sum(backends.values()), 2) if name is not None else None,
        "loadavg": os.getloadavg(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
