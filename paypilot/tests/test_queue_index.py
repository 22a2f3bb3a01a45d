"""The ORM broker's dequeue is answered by the (key, id) index: no scan and no sort of the
whole task table on either vendor (paypilot/migrations/0003_ormq_dequeue_index.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ

from paypilot.queue import DEQUEUE_SETTINGS_SQL, OrmBroker

pytestmark = pytest.mark.django_db


def test_dequeue_reads_the_queue_through_its_index(monkeypatch):
    monkeypatch.setattr(Conf, "POLL", 0)
    monkeypatch.setattr(Conf, "BULK", 2)
    broker = OrmBroker(list_key="paypilot-index-test")
    for i in range(5):
        OrmQ.objects.create(key=broker.list_key, payload=f"t{i}", lock=timezone.now() - timedelta(seconds=1))
        OrmQ.objects.create(key="another-queue", payload=f"o{i}", lock=timezone.now() - timedelta(seconds=1))

    with CaptureQueriesContext(connection) as queries:
        assert len(broker.dequeue() or []) == 2
    # PostgreSQL: one statement reads and locks (WITH due AS (SELECT ...) UPDATE ...);
    # SQLite: the ORM's SELECT, then its UPDATE.
    [read] = [q["sql"] for q in queries if "django_q_ormq" in q["sql"]
              and ("SKIP LOCKED" in q["sql"] if connection.vendor == "postgresql"
                   else q["sql"].lstrip().upper().startswith("SELECT"))]

    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The dequeue's own transaction settings (no sort), then sequential scans priced
            # out so that even this tiny, unanalysed table shows which index answers it.
            assert any(q["sql"] == DEQUEUE_SETTINGS_SQL for q in queries)
            cursor.execute(DEQUEUE_SETTINGS_SQL)
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {read}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {read}")
        plan = "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())

    assert "paypilot_ormq_dequeue" in plan, plan
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan
    if connection.vendor == "sqlite":
        assert "SCAN django_q_ormq" not in plan, plan
