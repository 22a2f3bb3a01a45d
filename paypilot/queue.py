"""django-q2's ORM broker with fewer round trips per task (Q_CLUSTER "broker_class").

The stock broker locks each task of a bulk read with its own UPDATE (one commit per task)
and acknowledges each with an ORM DELETE preceded by a connection health check. Here one
transaction takes up to `bulk` due tasks with `FOR UPDATE SKIP LOCKED` and locks them all
with one UPDATE, and the acknowledgement is one prepared DELETE. Measured on this machine
(one qcluster worker on one core, PostgreSQL, tasks that do nothing): about 470 tasks/s
with the stock broker, about 850 with this one (docs/benchmarks.md).

What stays the same: tasks are taken only when their lock time has passed, a taken task is
hidden until `retry` seconds later (then handed out again if it was never acknowledged),
and enqueueing inserts the queue row in the caller's transaction (one fixed INSERT instead
of the stock `OrmQ.objects.create`, whose query building costs about 0.1 ms per task on
the webhook acknowledgement's path).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from time import sleep
from typing import Any

from django.db import DatabaseError, close_old_connections, connections, transaction
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ

_ENQUEUE_SQL: dict[tuple[str, bool], str] = {}
# The id the next enqueue in this context gives its queue row (see `queue_row_id`).
_next_row_id: ContextVar[list[int] | None] = ContextVar("paypilot_queue_next_row_id", default=None)
# PostgreSQL: this transaction's COMMIT returns before its WAL is flushed (never the
# enqueue, which commits with the caller's own transaction).
ASYNC_COMMIT_SQL = "SELECT set_config('synchronous_commit', 'off', true)"
# PostgreSQL, for the dequeue's transaction only: take due tasks in id order from the
# (key, id) index (migration paypilot 0003), never by sorting every queued row. Without
# statistics (a queue filled faster than autovacuum analyses it) the planner estimated a
# few dozen rows and chose a bitmap scan plus a sort of all of them, on disk: 53 ms per
# batch at 20,000 queued on this machine, against 0.1 ms from the index. A lost lock
# UPDATE only hands the tasks out again after `retry` (see _delete), so no WAL flush wait.
DEQUEUE_SETTINGS_SQL = ("SELECT set_config('enable_sort', 'off', true), "
                        "set_config('synchronous_commit', 'off', true)")


@contextmanager
def queue_row_id(row_id: int | None) -> Iterator[None]:
    """The next `OrmBroker.enqueue` in this block gives its queue row this id, taken
    beforehand from the queue's own id sequence (so no other row can have it): the caller
    stored it with the work the task is for, and can delete the row once that work is done
    by other means (`queue_rows_delete`). None: the usual id."""
    token = _next_row_id.set([row_id] if row_id is not None else None)
    try:
        yield
    finally:
        _next_row_id.reset(token)


def queue_rows_delete(row_ids: Sequence[int]) -> int:
    """Delete these queue rows, in the caller's transaction: their tasks' work was done in
    that same transaction, so they need not run (a row already handed to a worker runs
    anyway, and its acknowledgement then deletes nothing). Returns how many were deleted."""
    if not row_ids:
        return 0
    connection = connections[Conf.ORM]
    table = connection.ops.quote_name(OrmQ._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", [list(row_ids)])
        else:
            cursor.execute(f"DELETE FROM {table} WHERE id IN ({', '.join(['%s'] * len(row_ids))})", list(row_ids))
        return int(cursor.rowcount)


class OrmBroker(ORM):
    _dequeue_sql: str | None = None

    def enqueue(self, task: str) -> int:
        """Insert the signed task package due now; returns the queue row's id (the one set
        by `queue_row_id`, if any)."""
        connection = connections[Conf.ORM]
        if not connection.in_atomic_block:  # inside one (the webhook's) it only builds a QuerySet
            self.get_connection()  # the stock broker's stale-connection check outside a transaction
        holder = _next_row_id.get()
        row_id = holder.pop() if holder else None  # used once
        key = (connection.vendor, row_id is not None)
        if key not in _ENQUEUE_SQL:
            qn = connection.ops.quote_name
            columns = [qn("key"), qn("payload"), qn("lock")] + ([qn("id")] if row_id is not None else [])
            _ENQUEUE_SQL[key] = (
                f"INSERT INTO {qn(OrmQ._meta.db_table)} ({', '.join(columns)}) "
                f"VALUES ({', '.join(['%s'] * len(columns))}) RETURNING {qn('id')}"
            )
        lock = connection.ops.adapt_datetimefield_value(timezone.now())
        params = [self.list_key or Conf.CLUSTER_NAME, task, lock] + ([row_id] if row_id is not None else [])
        with connection.cursor() as cursor:
            cursor.execute(_ENQUEUE_SQL[key], params)
            return int(cursor.fetchone()[0])

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        """Up to `bulk` due tasks as (id, payload), locked until now + retry; None (after
        the poll interval) when nothing is due."""
        connection = connections[Conf.ORM]
        if connection.vendor == "postgresql":
            due = self._dequeue_postgresql(connection)
            if due:
                return due
            sleep(Conf.POLL)
            return None
        with transaction.atomic(using=Conf.ORM):
            # SKIP LOCKED: two clusters reading at once take disjoint tasks (PostgreSQL);
            # SQLite's IMMEDIATE transactions serialise the two reads anyway.
            due = list(
                self.get_connection()
                .select_for_update(skip_locked=True)
                .filter(key=self.list_key, lock__lt=timezone.now())
                .order_by("pk")
                .values_list("pk", "payload")[: Conf.BULK]
            )
            if due:
                self.get_connection().filter(pk__in=[pk for pk, _ in due]).update(lock=self.timeout(None))
        if due:
            return due
        sleep(Conf.POLL)
        return None

    def _dequeue_postgresql(self, connection: Any) -> list[tuple[Any, Any]]:
        """The same read and lock as one statement (the pusher's cost per batch was mostly
        building the two ORM queries): due rows in id order, locked with SKIP LOCKED, their
        lock time moved in the same UPDATE."""
        self.get_connection()  # the stock broker's stale-connection check outside a transaction
        if self._dequeue_sql is None:
            qn = connection.ops.quote_name
            table, key, lock = qn(OrmQ._meta.db_table), qn("key"), qn("lock")
            self._dequeue_sql = (
                f"WITH due AS (SELECT id FROM {table} WHERE {key} = %s AND {lock} < %s ORDER BY id "
                f"LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"UPDATE {table} AS q SET {lock} = %s FROM due WHERE q.id = due.id RETURNING q.id, q.payload"
            )
        with transaction.atomic(using=Conf.ORM), connection.cursor() as cursor:
            cursor.execute(DEQUEUE_SETTINGS_SQL)
            cursor.execute(self._dequeue_sql, [self.list_key, timezone.now(), Conf.BULK, self.timeout(None)])
            return sorted(cursor.fetchall())  # RETURNING keeps no order: hand them out by id

    def acknowledge(self, task_id: Any) -> None:
        """Delete the finished task's queue row. A broken connection (database restarted)
        is closed and the delete retried once on a new one."""
        try:
            self._delete(task_id)
        except DatabaseError:
            close_old_connections()
            self._delete(task_id)

    def fail(self, task_id: Any) -> None:
        self.acknowledge(task_id)

    @staticmethod
    def _delete(task_id: Any) -> None:
        connection = connections[Conf.ORM]
        table = connection.ops.quote_name(OrmQ._meta.db_table)
        if connection.vendor != "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {table} WHERE id = %s", [task_id])
            return
        # The acknowledgement need not wait for its WAL flush: were it lost in a crash, the
        # task would be handed out again after `retry` and run twice, which every task
        # tolerates (CONVENTIONS.md, Tasks). Waiting was one fsync per task, the drain's
        # largest wait on a busy disk (docs/benchmarks.md). Only this transaction is
        # affected; the task's own writes commit durably in the worker.
        with transaction.atomic(using=Conf.ORM), connection.cursor() as cursor:
            cursor.execute(ASYNC_COMMIT_SQL)
            cursor.execute(f"DELETE FROM {table} WHERE id = %s", [task_id])
