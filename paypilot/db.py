"""Database-level guards: append-only tables and the one way past them.

`append_only(table)` is a migration operation that installs triggers refusing UPDATE and
DELETE on SQLite and PostgreSQL. `append_only_override(operation)` is the single, named
exception (GDPR erasure, retention purge): it inserts a marker row that the triggers look
for and deletes it before the surrounding transaction commits. `foreign_key_index_drop`
drops a foreign key's own index without the table rebuild (and lost triggers) that
Django's AlterField means on SQLite; `byte_order_collation` moves fields to
`paypilot.fields`' identifier fields, a change only PostgreSQL's columns see.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, migrations, transaction

OVERRIDE_TABLE = "paypilot_appendonlyoverride"
ALLOWED_OVERRIDES = frozenset({"gdpr_erase", "retention_purge"})

_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION paypilot_refuse_change() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM {OVERRIDE_TABLE}) THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'append-only table %: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = '42501';
END;
$$ LANGUAGE plpgsql;
"""


def _statements(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [
            _PG_FUNCTION,
            f'DROP TRIGGER IF EXISTS {table}_append_only ON "{table}"',
            f'CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION paypilot_refuse_change()",
        ]
    if vendor == "sqlite":
        return [
            f"""CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON "{table}"
            WHEN NOT EXISTS (SELECT 1 FROM {OVERRIDE_TABLE})
            BEGIN SELECT RAISE(ABORT, 'append-only table {table}: {op} refused'); END"""
            for op in ("UPDATE", "DELETE")
        ]
    raise RuntimeError(f"PayPilot runs on SQLite or PostgreSQL; no append-only triggers for {vendor}")


def _drop_statements(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [f'DROP TRIGGER IF EXISTS {table}_append_only ON "{table}"']
    return [f"DROP TRIGGER IF EXISTS {table}_no_{op}" for op in ("update", "delete")]


def append_only(table: str) -> migrations.RunPython:
    """Migration operation: refuse UPDATE and DELETE on `table` at the database."""

    def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in _statements(schema_editor.connection.vendor, table):
            schema_editor.execute(sql, params=None)

    def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in _drop_statements(schema_editor.connection.vendor, table):
            schema_editor.execute(sql, params=None)

    return migrations.RunPython(forwards, backwards, elidable=False)


def foreign_key_index_drop(app_label: str, alter_field: migrations.AlterField) -> migrations.SeparateDatabaseAndState:
    """Migration operation: the foreign key of `alter_field` (the AlterField Django generated
    for `db_index=False`) keeps its constraint and loses its own single-column index, by
    DROP INDEX alone.

    Django's AlterField for that change rebuilds the whole table on SQLite (copy, drop,
    rename), and a rebuilt table has lost its triggers: the append-only guards and the
    ledger's rollup triggers would silently go. So the state change is Django's and the
    database change is one DROP INDEX of the name Django gave the index (the same on both
    vendors); backwards, one CREATE INDEX of it."""

    def _index(apps, schema_editor):  # type: ignore[no-untyped-def]
        model = apps.get_model(app_label, alter_field.model_name)
        column = model._meta.get_field(alter_field.name).column
        table = model._meta.db_table
        return schema_editor._create_index_name(table, [column], suffix=""), table, column

    def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        name, _, _ = _index(apps, schema_editor)
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}", params=None)

    def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        name, table, column = _index(apps, schema_editor)
        quote = schema_editor.quote_name
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)})",
                              params=None)

    return migrations.SeparateDatabaseAndState(
        state_operations=[alter_field],
        database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
    )


def byte_order_collation(
    app_label: str, alter_fields: list[migrations.AlterField],
) -> migrations.SeparateDatabaseAndState:
    """Migration operation: the AlterFields Django generated for moving text fields to
    `paypilot.fields.IdentifierCharField`/`IdentifierTextField`. The state change is
    Django's; the database change is one ALTER COLUMN ... COLLATE "C" per column on
    PostgreSQL (its indexes are rebuilt with it) and nothing on SQLite, whose columns are
    byte-ordered already: Django's AlterField would copy each whole table there once per
    field for no change at all."""

    def _columns(apps):  # type: ignore[no-untyped-def]
        for operation in alter_fields:
            model = apps.get_model(app_label, operation.model_name)
            yield model._meta.db_table, model._meta.get_field(operation.name)

    def _collate(collation: str):  # type: ignore[no-untyped-def]
        def alter(apps, schema_editor):  # type: ignore[no-untyped-def]
            if schema_editor.connection.vendor != "postgresql":
                return
            quote = schema_editor.quote_name
            for table, field in _columns(apps):
                kind = field.db_type(schema_editor.connection)
                schema_editor.execute(f"ALTER TABLE {quote(table)} ALTER COLUMN {quote(field.column)} "
                                      f"TYPE {kind} COLLATE {quote(collation)}", params=None)
        return alter

    return migrations.SeparateDatabaseAndState(
        state_operations=list(alter_fields),
        database_operations=[migrations.RunPython(_collate("C"), _collate("default"), elidable=False)],
    )


@contextmanager
def append_only_override(operation: str) -> Iterator[None]:
    """Allow UPDATE/DELETE on append-only tables for one named operation, in one transaction."""
    if operation not in ALLOWED_OVERRIDES:
        raise ValueError(f"unknown append-only override: {operation}")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {OVERRIDE_TABLE} (operation, created_at) VALUES (%s, CURRENT_TIMESTAMP)",
                [operation],
            )
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {OVERRIDE_TABLE} WHERE operation = %s", [operation])


def connection_drop_after_failure() -> None:
    """Close this thread's connection after a database failure, so the next request opens
    a fresh one. Without it a SQLite connection opened while the file was read-only stayed
    read-only for CONN_MAX_AGE (60 s) after the file was writable again: Django keeps a
    connection after an error when `is_usable()` says so, and on SQLite it always does.
    Inside an atomic block (a test's transaction) nothing is closed: the block owns it."""
    if connection.in_atomic_block:
        return
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - a connection that cannot even close is gone anyway
        pass
