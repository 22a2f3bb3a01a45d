"""Database guard for the webhook inbox: the raw body never changes once stored.

Modelled on `paypilot.db.append_only`, but narrower: status, outcome, error and attempts
must stay updatable, so the trigger fires only when the `body` column would change (and on
DELETE). The same named override (`paypilot.db.append_only_override`, e.g. the retention
purge) lets one transaction past it.
"""

from __future__ import annotations

from django.db import migrations

from paypilot.db import OVERRIDE_TABLE

_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION integrations_refuse_body_change() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM {OVERRIDE_TABLE}) THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'append-only body of %: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = '42501';
END;
$$ LANGUAGE plpgsql;
"""


def _statements(vendor: str, table: str, column: str) -> list[str]:
    if vendor == "postgresql":
        return [
            _PG_FUNCTION,
            f'DROP TRIGGER IF EXISTS {table}_{column}_append_only ON "{table}"',
            # UPDATE OF fires only when the column is in the SET list; the WHEN clause lets
            # a full-row save that rewrites the same bytes through.
            f'CREATE TRIGGER {table}_{column}_append_only BEFORE UPDATE OF "{column}" ON "{table}" '
            f'FOR EACH ROW WHEN (OLD."{column}" IS DISTINCT FROM NEW."{column}") '
            f"EXECUTE FUNCTION integrations_refuse_body_change()",
            f'DROP TRIGGER IF EXISTS {table}_no_delete ON "{table}"',
            f'CREATE TRIGGER {table}_no_delete BEFORE DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION integrations_refuse_body_change()",
        ]
    if vendor == "sqlite":
        return [
            f"""CREATE TRIGGER IF NOT EXISTS {table}_{column}_append_only
            BEFORE UPDATE OF "{column}" ON "{table}"
            WHEN NEW."{column}" IS NOT OLD."{column}"
                AND NOT EXISTS (SELECT 1 FROM {OVERRIDE_TABLE})
            BEGIN SELECT RAISE(ABORT, 'append-only body of {table}: UPDATE refused'); END""",
            f"""CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON "{table}"
            WHEN NOT EXISTS (SELECT 1 FROM {OVERRIDE_TABLE})
            BEGIN SELECT RAISE(ABORT, 'append-only body of {table}: DELETE refused'); END""",
        ]
    raise ValueError(f"append-only body triggers are not written for {vendor}")


def _drop_statements(vendor: str, table: str, column: str) -> list[str]:
    if vendor == "postgresql":
        return [
            f'DROP TRIGGER IF EXISTS {table}_{column}_append_only ON "{table}"',
            f'DROP TRIGGER IF EXISTS {table}_no_delete ON "{table}"',
        ]
    return [
        f"DROP TRIGGER IF EXISTS {table}_{column}_append_only",
        f"DROP TRIGGER IF EXISTS {table}_no_delete",
    ]


def append_only_column(table: str, column: str) -> migrations.RunPython:
    """Migration operation: refuse changing `column` and deleting rows of `table`."""

    def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in _statements(schema_editor.connection.vendor, table, column):
            schema_editor.execute(sql, params=None)

    def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in _drop_statements(schema_editor.connection.vendor, table, column):
            schema_editor.execute(sql, params=None)

    return migrations.RunPython(forwards, backwards, elidable=False)
