"""Fixed SQL for the webhook hot path: the event INSERT, its task's queue row; the broker.

Building an INSERT through the ORM costs about 0.1 ms of CPU per row (measured in process:
the event's and the queue row's `create()` were a fifth of the whole acknowledgement on
SQLite); this statement is built once per database vendor from the model's own metadata,
and each value passes the field's own `get_db_prep_save`, as the ORM would (but for text
and integer fields given values of their own type, for which that is the identity). The
hot path passes the row's values as a mapping (`event_values_insert`): no model instance,
its signals and per-field defaults, is built for it; and its task package is built here
as `async_task` builds it (`task_enqueue`), without the parts the webhook never uses.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from django.db import connections, models
from django.utils import timezone
from django_q.brokers import Broker, get_broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signals import pre_enqueue
from django_q.signing import SignedPackage

from integrations.models import WebhookEvent
from paypilot.queue import OrmBroker
from paypilot.tenancy import TENANT_SETTING, TenantContextError

EVENT_UNIQUE_KEY = "integrations_webhook_unique_key"

_Statement = tuple[str, "list[models.Field[Any, Any]]", list[bool]]
_statements: dict[tuple[str, str, bool, str], _Statement] = {}
# Fields whose get_db_prep_save returns a str, int or None value unchanged on SQLite and
# PostgreSQL (a foreign key to an integer key included): the hot path skips the call.
_PLAIN_FIELDS = (models.CharField, models.TextField, models.IntegerField, models.ForeignKey)


def _plain(field: models.Field[Any, Any]) -> bool:
    if isinstance(field, models.ForeignKey):
        return isinstance(field.target_field, models.IntegerField)
    return isinstance(field, _PLAIN_FIELDS)


def _insert_statement(model: type[models.Model], alias: str, *, conflict: str, bind_tenant: bool,
                      sequence_column: tuple[str, str] | None = None) -> _Statement:
    """`INSERT ... RETURNING pk` for every concrete column but the pk; with `conflict` (a
    unique constraint's name), a row that would break it is skipped and nothing returned;
    with `bind_tenant`, the tenant_id value goes through set_config, so the statement also
    binds the row's tenant for the rest of the transaction (paypilot.tenancy); with
    `sequence_column` (attname, sequence), that column takes the sequence's next value and
    is returned after the pk (PostgreSQL)."""
    connection = connections[alias]
    key = (model._meta.label, connection.vendor, bind_tenant, sequence_column[0] if sequence_column else "")
    if key not in _statements:
        qn = connection.ops.quote_name
        meta = model._meta
        fields = [field for field in meta.concrete_fields if not field.primary_key]
        if sequence_column:
            fields = [field for field in fields if field.attname != sequence_column[0]]
        values = [
            f"set_config('{TENANT_SETTING}', %s, true)::bigint" if bind_tenant and field.attname == "tenant_id"
            else "%s"
            for field in fields
        ]
        columns = [qn(str(field.column)) for field in fields]
        returning = qn(str(meta.pk.column))  # type: ignore[union-attr]
        if sequence_column:
            column = qn(str(meta.get_field(sequence_column[0]).column))  # type: ignore[union-attr]
            columns.append(column)
            values.append(f"nextval('{sequence_column[1]}'::regclass)")
            returning += f", {column}"
        sql = f"INSERT INTO {qn(meta.db_table)} ({', '.join(columns)}) VALUES ({', '.join(values)})"
        if conflict:
            [unique] = [c for c in meta.constraints if isinstance(c, models.UniqueConstraint) and c.name == conflict]
            keys = ", ".join(qn(str(field.column)) for field in fields if field.name in unique.fields)
            sql += f" ON CONFLICT ({keys}) DO NOTHING"
        _statements[key] = (f"{sql} RETURNING {returning}", fields, [_plain(field) for field in fields])
    return _statements[key]


def _insert(model: type[models.Model], values: Mapping[str, Any], alias: str, *, conflict: str = "",
            bind_tenant: bool = False, sequence_column: tuple[str, str] | None = None,
            ) -> tuple[int, int | None] | None:
    """Insert one row of `model` from `values` (by attname; a missing field takes its
    default, an auto_now one the time now). Returns (pk, the sequence column's value or
    None), or None when `conflict` skipped the row."""
    sql, fields, plain = _insert_statement(model, alias, conflict=conflict, bind_tenant=bind_tenant,
                                           sequence_column=sequence_column)
    connection = connections[alias]
    params = []
    for field, is_plain in zip(fields, plain, strict=True):
        if field.attname in values:
            value = values[field.attname]
        elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value = timezone.now()
        else:
            value = field.get_default()
        if not (is_plain and (value is None or type(value) in (str, int))):
            value = field.get_db_prep_save(value, connection)
        params.append(str(value) if bind_tenant and field.attname == "tenant_id" else value)  # set_config: text
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    return int(row[0]), (row[1] if sequence_column else None)


_queue_sequence: dict[str, str] = {}


def _queue_row_sequence(alias: str) -> str:
    """The sequence behind the ORM broker's queue ids (PostgreSQL), looked up once."""
    if alias not in _queue_sequence:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [OrmQ._meta.db_table])
            _queue_sequence[alias] = cursor.fetchone()[0]
    return _queue_sequence[alias]


def event_values_insert(values: Mapping[str, Any]) -> tuple[int, int | None] | None:
    """Insert a webhook event from its column values (by attname: tenant_id, provider,
    event_key, ...; the others take their defaults) and return (its new id, its queue row's
    id or None), or None when the tenant already has an event with this provider and key
    (the unique constraint answers, no error is raised, so no savepoint is needed).

    On PostgreSQL the same statement binds the event's tenant for the rest of the
    transaction (row-level security): set_config runs while the row is built, before the
    policy checks it, so the request needs no separate round trip to bind it. With the ORM
    broker there, it also takes the id of the event's queue row from the queue's own sequence
    (the `task_row` column, which `enqueue_processing` then uses), so a batch that applies the
    event under another event's task can delete that row (integrations.services.processing)."""
    connection = connections["default"]
    bind = connection.vendor == "postgresql"
    if bind and not connection.in_atomic_block:
        raise TenantContextError("event_values_insert() binds the tenant for a transaction; open one")
    sequence = None
    if bind and isinstance(queue_broker(), OrmBroker) and queue_broker_alias() == "default":
        sequence = ("task_row", _queue_row_sequence("default"))
    return _insert(WebhookEvent, values, "default", conflict=EVENT_UNIQUE_KEY, bind_tenant=bind,
                   sequence_column=sequence)


def task_enqueue(func: str, *args: Any, name: str, ack_failure: bool, save: bool) -> bool:
    """Queue `func(*args)` for the cluster through the process's ORM broker, in the caller's
    transaction, with the package `async_task` would build (the same keys and values,
    pickled and signed by django-q2's SignedPackage, so the cluster reads it as its own).
    What it leaves out costs CPU and gives a webhook nothing: a human-readable task name
    (`name` is given), a broker per call, the log lines. False, with nothing queued, when
    this cannot stand in for `async_task`: sync mode (run inline), another broker, or a
    `pre_enqueue` receiver to tell; the caller then uses `async_task`."""
    broker = queue_broker()
    if broker is None or Conf.SYNC or pre_enqueue.has_listeners():
        return False
    task: dict[str, Any] = {"id": uuid.uuid4().hex, "name": name, "func": func, "args": args,
                            "save": save, "ack_failure": ack_failure}
    if Conf.CACHED:
        task["cached"] = Conf.CACHED
    task["kwargs"] = {}
    task["started"] = timezone.now()
    broker.enqueue(SignedPackage.dumps(task))
    return True


_broker: Broker | None = None
_broker_lock = threading.Lock()


def queue_broker() -> Broker | None:
    """The broker the inbox enqueues with, built once per process (async_task builds one
    per call otherwise) when it is the ORM broker or a subclass (paypilot.queue.OrmBroker,
    whose enqueue is one fixed INSERT); None, so django-q2 picks per call, for any other."""
    global _broker
    if _broker is None:
        with _broker_lock:
            if _broker is None:
                _broker = get_broker()
    return _broker if isinstance(_broker, ORM) else None


def queue_broker_alias() -> str:
    """The database alias of the ORM broker's queue table."""
    return str(Conf.ORM)
