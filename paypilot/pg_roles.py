"""The PostgreSQL application role: a login that owns nothing and is granted only what the
web processes and the qcluster workers need.

Privileges are computed from the catalog, not from a list to keep up to date:

- every table of the schema gets SELECT, INSERT, UPDATE, DELETE, except
- append-only tables, found by their guard triggers (triggers whose function consults the
  append-only override table, i.e. `paypilot.db.append_only` and column variants such as
  `integrations.db.append_only_column`): a guard on DELETE removes DELETE; a guard on
  UPDATE of every column removes UPDATE. A guard on UPDATE OF some columns keeps UPDATE,
  so Django's full-row `save()` still works, and the trigger refuses a changed value;
- the override table itself is read-only (the guard functions run as the caller and read
  it), so the application can never switch the append-only guard off: GDPR erasure and
  retention run as the owner;
- `django_migrations` is read-only: migrations run as the owner;
- no TRUNCATE, REFERENCES or TRIGGER anywhere, no CREATE on the schema, EXECUTE on the two
  SECURITY DEFINER functions of `paypilot.rls`, USAGE on the sequences.

Row-level security (paypilot.rls) then limits the rows of every tenant table.
Re-run after every `migrate`: new tables are invisible to the role until then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from psycopg import ClientCursor

from paypilot.db import OVERRIDE_TABLE
from paypilot.rls import LOOKUP_FUNCTIONS

DEFAULT_APP_ROLE = "paypilot_app"
READ_ONLY_TABLES = frozenset({OVERRIDE_TABLE, "django_migrations"})

# pg_trigger.tgtype bits (src/include/catalog/pg_trigger.h)
_TRIGGER_DELETE = 1 << 3
_TRIGGER_UPDATE = 1 << 4


@dataclass
class TablePlan:
    table: str
    privileges: list[str] = field(default_factory=list)
    guarded_delete: bool = False
    guarded_update: bool = False  # every column guarded
    guarded_columns: list[str] = field(default_factory=list)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def append_only_guards(*, using: str = DEFAULT_DB_ALIAS) -> dict[str, dict[str, Any]]:
    """Tables with append-only guard triggers: {table: {delete, update, columns}}."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, t.tgtype,
                   ARRAY(SELECT a.attname FROM pg_attribute a
                          WHERE a.attrelid = t.tgrelid AND a.attnum = ANY(t.tgattr))
              FROM pg_trigger t
              JOIN pg_class c ON c.oid = t.tgrelid
              JOIN pg_proc p ON p.oid = t.tgfoid
             WHERE NOT t.tgisinternal AND NOT c.relispartition  -- a partition's copy: see its parent
               AND c.relnamespace = current_schema()::regnamespace
               AND p.prosrc LIKE %s
            """,
            [f"%{OVERRIDE_TABLE}%"],
        )
        guards: dict[str, dict[str, Any]] = {}
        for table, tgtype, columns in cursor.fetchall():
            entry = guards.setdefault(table, {"delete": False, "update": False, "columns": []})
            if tgtype & _TRIGGER_DELETE:
                entry["delete"] = True
            if tgtype & _TRIGGER_UPDATE:
                if columns:
                    entry["columns"].extend(columns)
                else:
                    entry["update"] = True
        return guards


def grant_plan(*, using: str = DEFAULT_DB_ALIAS) -> list[TablePlan]:
    """What the application role gets on each table of the current schema."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            # Not a partition (paypilot.partitioning): the role reaches rows through the
            # partitioned parent, whose row-level security policy applies; a partition's own
            # grant would be a way around it.
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') AND NOT relispartition "
            "AND relnamespace = current_schema()::regnamespace ORDER BY relname"
        )
        tables = [row[0] for row in cursor.fetchall()]
    guards = append_only_guards(using=using)
    plans = []
    for table in tables:
        guard = guards.get(table, {})
        plan = TablePlan(
            table,
            guarded_delete=guard.get("delete", False),
            guarded_update=guard.get("update", False),
            guarded_columns=sorted(set(guard.get("columns", []))),
        )
        if table in READ_ONLY_TABLES:
            plan.privileges = ["SELECT"]
        else:
            plan.privileges = ["SELECT", "INSERT"]
            if not plan.guarded_update:
                plan.privileges.append("UPDATE")
            if not plan.guarded_delete:
                plan.privileges.append("DELETE")
        plans.append(plan)
    return plans


def role_exists(role: str, *, using: str = DEFAULT_DB_ALIAS) -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        return cursor.fetchone() is not None


_ROLE_ATTRIBUTES = "NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION INHERIT"


def app_role_apply(
    *, role: str = DEFAULT_APP_ROLE, password: str | None = None, login: bool = True,
    using: str = DEFAULT_DB_ALIAS,
) -> list[TablePlan]:
    """Create or tighten the application role and (re)grant exactly the planned privileges.

    Idempotent: every table's privileges are revoked and granted again in one transaction,
    so a table that became append-only since the last run loses UPDATE/DELETE."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        raise ValueError("the application role exists only on PostgreSQL")
    attributes = f"{'LOGIN' if login else 'NOLOGIN'} {_ROLE_ATTRIBUTES}"
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if role_exists(role, using=using):
            # Only a superuser may even restate NOSUPERUSER/NOBYPASSRLS/NOREPLICATION, so they
            # are sent only when the role has the flag (and then it takes a superuser to fix).
            cursor.execute(
                "SELECT rolsuper, rolbypassrls, rolreplication FROM pg_roles WHERE rolname = %s", [role]
            )
            flags = cursor.fetchone()
            names = ("NOSUPERUSER", "NOBYPASSRLS", "NOREPLICATION")
            needed = [name for name, on in zip(names, flags, strict=True) if on]
            basic = f"{'LOGIN' if login else 'NOLOGIN'} NOCREATEDB NOCREATEROLE INHERIT"
            cursor.execute(f"ALTER ROLE {_q(role)} {basic} {' '.join(needed)}")
        else:
            cursor.execute(f"CREATE ROLE {_q(role)} {attributes}")
        if password is not None:
            # On the raw driver connection: Django's debug cursor would log the statement.
            with ClientCursor(connection.connection) as raw:
                raw.execute(f"ALTER ROLE {_q(role)} PASSWORD %s", [password])
        cursor.execute("SELECT current_database(), current_schema()")
        database, schema = cursor.fetchone()
        cursor.execute(f"GRANT CONNECT ON DATABASE {_q(database)} TO {_q(role)}")
        cursor.execute(f"GRANT USAGE ON SCHEMA {_q(schema)} TO {_q(role)}")
        cursor.execute(f"REVOKE CREATE ON SCHEMA {_q(schema)} FROM {_q(role)}")
        plans = grant_plan(using=using)
        for plan in plans:
            qualified = f"{_q(schema)}.{_q(plan.table)}"
            cursor.execute(f"REVOKE ALL ON {qualified} FROM {_q(role)}")
            cursor.execute(f"GRANT {', '.join(plan.privileges)} ON {qualified} TO {_q(role)}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {_q(schema)} TO {_q(role)}")
        for signature in LOOKUP_FUNCTIONS:
            cursor.execute(
                "SELECT to_regprocedure(%s) IS NOT NULL", [f"{schema}.{signature}"]
            )
            if cursor.fetchone()[0]:
                cursor.execute(f"GRANT EXECUTE ON FUNCTION {_q(schema)}.{signature} TO {_q(role)}")
    return plans


def app_role_problems(*, role: str = DEFAULT_APP_ROLE, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """What is wrong with the application role as it stands (empty list: all good)."""
    connection = connections[using]
    if not role_exists(role, using=using):
        return [f"role {role} does not exist"]
    problems: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = %s",
            [role],
        )
        superuser, bypass, createrole, createdb = cursor.fetchone()
        for flag, name in ((superuser, "SUPERUSER"), (bypass, "BYPASSRLS"),
                           (createrole, "CREATEROLE"), (createdb, "CREATEDB")):
            if flag:
                problems.append(f"role {role} has {name}")
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = %s) "
            "AND relnamespace = current_schema()::regnamespace",
            [role],
        )
        owned = [row[0] for row in cursor.fetchall()]
        if owned:
            problems.append(f"role {role} owns {', '.join(owned)} (owners are exempt from RLS)")
        cursor.execute(
            "SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid "
            "WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = %s)",
            [role],
        )
        memberships = [row[0] for row in cursor.fetchall()]
        if memberships:
            problems.append(f"role {role} is a member of {', '.join(memberships)}")
        for plan in grant_plan(using=using):
            for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"):
                cursor.execute(
                    "SELECT has_table_privilege(%s, %s, %s)",
                    [role, connection.ops.quote_name(plan.table), privilege],
                )
                has = cursor.fetchone()[0]
                if has and privilege not in plan.privileges:
                    problems.append(f"{role} may {privilege} {plan.table}")
                if not has and privilege in plan.privileges:
                    problems.append(f"{role} lacks {privilege} on {plan.table}")
    return problems
