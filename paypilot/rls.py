"""PostgreSQL row-level security on every tenant table, found from the app registry.

A tenant table is the table of any concrete model with a `tenant` foreign key to
`paypilot.Tenant`, so tables added by later migrations are covered without a list to keep.
`rls_apply()` runs after every `migrate` (a post_migrate handler) and from
`manage.py rls_apply`; it is idempotent and, when nothing changed, costs one catalog query.

Each tenant table gets ENABLE and FORCE ROW LEVEL SECURITY and one policy,
`paypilot_tenant_isolation`, for every command, USING and WITH CHECK:

    tenant_id = (SELECT NULLIF(current_setting('app.tenant_id', true), '')::bigint)
    OR (SELECT current_user = <the table's owner>)

Each side is a scalar subquery so PostgreSQL evaluates it once per statement (an InitPlan)
and compares a constant per row. Written bare, both are evaluated for every row read or
written: a GUC lookup by name, a text-to-bigint cast and, for the owner, a role-name lookup.
Measured on a million rows (`bench/rls_policy.py`; docs/benchmarks.md, "Row-level
security, once per statement"): a scan under the policy 155 -> 85 ms, an INSERT ... SELECT
2.21 -> 2.04 s. The meaning is the same: the setting cannot change within a statement.

The owner clause is deliberate. FORCE makes the owner subject to the policy like anyone
else, and the owner is the role that runs migrations, `gdpr_erase`, `retention_purge` and
the SECURITY DEFINER functions below; those must see every tenant. Naming the owner in the
policy (instead of relying on the owner's implicit bypass) keeps that exception visible in
`pg_policies`, and the application role, which owns nothing, never matches it. Rows with a
NULL tenant (platform audit events) match nobody but the owner.

Three SECURITY DEFINER functions cover what comes before a tenant is known:
`paypilot_token_tenant(prefix)` (bearer-token authentication),
`paypilot_row_tenant(table, unique column, value)` (a task given a row id, an admin user's
membership) — both return only a tenant id — and `paypilot_audit_platform(...)`, which
appends a tenant-less audit event (an auth rejection before any tenant is known).
EXECUTE is revoked from PUBLIC and granted to the application role by `manage.py pg_roles`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.apps import apps as global_apps
from django.db import DEFAULT_DB_ALIAS, connections, models, transaction

from paypilot.tenancy import (
    PLATFORM_AUDIT_FUNCTION,
    ROW_TENANT_FUNCTION,
    TENANT_SETTING,
    TOKEN_TENANT_FUNCTION,
)

POLICY_NAME = "paypilot_tenant_isolation"
POLICY_VERSION = "3"  # 3: both sides as once-per-statement subqueries
# SECURITY DEFINER functions; EXECUTE goes to the application role only (manage.py pg_roles).
LOOKUP_FUNCTIONS = (
    f"{TOKEN_TENANT_FUNCTION}(text)",
    f"{ROW_TENANT_FUNCTION}(regclass, text, text)",
    f"{PLATFORM_AUDIT_FUNCTION}(text, text, jsonb, timestamptz)",
)


@dataclass(frozen=True)
class TenantTable:
    table: str
    column: str  # the tenant foreign key column, normally tenant_id
    nullable: bool
    model_label: str


def tenant_tables(app_registry: Any = None) -> list[TenantTable]:
    """Every concrete model with a `tenant` foreign key to paypilot.Tenant, by table name."""
    registry = app_registry or global_apps
    tenant_model = registry.get_model("paypilot", "Tenant")
    found: dict[str, TenantTable] = {}
    for model in registry.get_models():
        opts = model._meta
        if opts.proxy or not opts.managed or opts.abstract:
            continue
        try:
            field = opts.get_field("tenant")
        except Exception:  # noqa: BLE001 - FieldDoesNotExist: not a tenant table
            continue
        if not isinstance(field, models.ForeignKey) or field.related_model is not tenant_model:
            continue
        found[opts.db_table] = TenantTable(opts.db_table, field.column, field.null, opts.label)
    return sorted(found.values(), key=lambda t: t.table)


def _quote(connection: Any, name: str) -> str:
    return connection.ops.quote_name(name)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _predicate(table: TenantTable, owner: str, *, connection: Any) -> str:
    column = _quote(connection, table.column)
    return (
        f"({column} = (SELECT NULLIF(current_setting({_literal(TENANT_SETTING)}, true), '')::bigint)"
        f" OR (SELECT current_user = {_literal(owner)}::name))"
    )


def _signature(table: TenantTable, owner: str) -> str:
    """Stored as the policy's comment: a changed owner, column or nullability re-installs."""
    raw = f"{POLICY_VERSION}:{table.column}:{table.nullable}:{owner}"
    return f"paypilot rls v{POLICY_VERSION} " + hashlib.sha256(raw.encode()).hexdigest()[:16]


def _functions_sql(connection: Any, schema: str, token_table: str) -> list[str]:
    qs = _quote(connection, schema)
    audit_table = global_apps.get_model("paypilot", "AuditEvent")._meta.db_table
    return [
        f"""
CREATE OR REPLACE FUNCTION {qs}.{TOKEN_TENANT_FUNCTION}(token_prefix text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT tenant_id FROM {qs}.{_quote(connection, token_table)} WHERE prefix = token_prefix
$$""",
        f"""
CREATE OR REPLACE FUNCTION {qs}.{ROW_TENANT_FUNCTION}(tbl regclass, pk_column text, pk text)
RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result bigint;
    column_type text;
BEGIN
    -- Only tables carrying the tenant policy: this must not become a way to read others.
    IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = tbl AND polname = '{POLICY_NAME}') THEN
        RAISE EXCEPTION 'not a tenant table: %', tbl USING ERRCODE = '42501';
    END IF;
    -- Only by a column that identifies one row (the pk, a token prefix, a one-to-one user
    -- id): a lookup by e-mail or name would tell which tenant knows that person. On a
    -- partitioned table (paypilot.partitioning) the primary key is widened by the partition
    -- columns, so its leading column (the sequence-assigned id) is accepted there too.
    SELECT format_type(a.atttypid, a.atttypmod) INTO column_type
      FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
     WHERE i.indrelid = tbl AND i.indisunique AND a.attname = pk_column
       AND (i.indnkeyatts = 1
            OR (i.indisprimary AND (SELECT relkind FROM pg_class WHERE oid = tbl) = 'p'))
     LIMIT 1;
    IF column_type IS NULL THEN
        RAISE EXCEPTION 'not a unique column of %: %', tbl, pk_column USING ERRCODE = '42501';
    END IF;
    -- The value is cast to the column's type, not the column to text: the unique index then
    -- answers (a cast column would scan the whole table on every call).
    BEGIN
        EXECUTE format('SELECT tenant_id FROM %s WHERE %I = $1::%s', tbl, pk_column, column_type)
            INTO result USING pk;
    EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
        RETURN NULL;  -- not a value of that column: no such row
    END;
    RETURN result;
END
$$""",
        f"""
CREATE OR REPLACE FUNCTION {qs}.{PLATFORM_AUDIT_FUNCTION}(
    p_event text, p_actor text, p_detail jsonb, p_created_at timestamptz
) RETURNS bigint LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO {qs}.{_quote(connection, audit_table)} (event, tenant_id, actor, detail, created_at)
    VALUES ($1, NULL, $2, $3, $4) RETURNING id
$$""",
        *(f"REVOKE ALL ON FUNCTION {qs}.{signature} FROM PUBLIC" for signature in LOOKUP_FUNCTIONS),
    ]


@dataclass
class RlsState:
    table: str
    enabled: bool
    forced: bool
    owner: str
    signature: str | None  # comment on our policy, None when the policy is missing
    other_policies: list[str]


def rls_state(*, using: str = DEFAULT_DB_ALIAS, tables: list[str] | None = None) -> dict[str, RlsState]:
    """Row security flags and policies of the given tables (default: all tenant tables)."""
    connection = connections[using]
    names = tables if tables is not None else [t.table for t in tenant_tables()]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   pg_get_userbyid(c.relowner),
                   (SELECT d.description FROM pg_policy p
                      JOIN pg_description d ON d.objoid = p.oid
                       AND d.classoid = 'pg_policy'::regclass
                     WHERE p.polrelid = c.oid AND p.polname = %s),
                   ARRAY(SELECT p.polname FROM pg_policy p
                          WHERE p.polrelid = c.oid AND p.polname <> %s ORDER BY 1)
              FROM pg_class c
             WHERE c.relkind IN ('r', 'p') AND c.relname = ANY(%s)
               AND c.relnamespace = current_schema()::regnamespace
            """,
            [POLICY_NAME, POLICY_NAME, names],
        )
        return {
            row[0]: RlsState(row[0], row[1], row[2], row[3], row[4], list(row[5]))
            for row in cursor.fetchall()
        }


def _functions_signature(statements: list[str]) -> str:
    return "paypilot rls functions " + hashlib.sha256("\n".join(statements).encode()).hexdigest()[:16]


def _functions_current(cursor: Any) -> bool:
    """Both lookup functions exist and carry the comment of the SQL this code would install."""
    cursor.execute("SELECT current_schema()")
    schema = cursor.fetchone()[0]
    token_table = global_apps.get_model("paypilot", "ApiToken")._meta.db_table
    expected = _functions_signature(_functions_sql(connections[DEFAULT_DB_ALIAS], schema, token_table))
    cursor.execute(
        "SELECT obj_description(to_regprocedure(%s), 'pg_proc'), to_regprocedure(%s) IS NOT NULL",
        [f"{schema}.{ROW_TENANT_FUNCTION}(regclass, text, text)", f"{schema}.{TOKEN_TENANT_FUNCTION}(text)"],
    )
    comment, token_present = cursor.fetchone()
    return bool(token_present) and comment == expected


def rls_apply(*, using: str = DEFAULT_DB_ALIAS, force: bool = False) -> list[str]:
    """Install or repair row-level security on every existing tenant table.

    Returns the tables changed (empty when everything already matched). A no-op on
    databases other than PostgreSQL."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return []
    wanted = tenant_tables()
    state = rls_state(using=using, tables=[t.table for t in wanted])
    stale = [
        t for t in wanted
        if t.table in state and (
            force
            or not state[t.table].enabled
            or not state[t.table].forced
            or state[t.table].signature != _signature(t, state[t.table].owner)
        )
    ]
    with connection.cursor() as cursor:
        functions_ok = _functions_current(cursor)
    if not stale and functions_ok and not force:
        return []
    token_table = global_apps.get_model("paypilot", "ApiToken")._meta.db_table
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = cursor.fetchone()[0]
        statements = _functions_sql(connection, schema, token_table)
        for sql in statements:
            cursor.execute(sql)
        cursor.execute(
            f"COMMENT ON FUNCTION {_quote(connection, schema)}.{ROW_TENANT_FUNCTION}(regclass, text, text) "
            f"IS {_literal(_functions_signature(statements))}"
        )
        for table in stale:
            owner = state[table.table].owner
            qt = _quote(connection, table.table)
            policy = _quote(connection, POLICY_NAME)
            cursor.execute(f"ALTER TABLE {qt} ENABLE ROW LEVEL SECURITY")
            cursor.execute(f"ALTER TABLE {qt} FORCE ROW LEVEL SECURITY")
            cursor.execute(f"DROP POLICY IF EXISTS {policy} ON {qt}")
            cursor.execute(
                f"CREATE POLICY {policy} ON {qt} AS PERMISSIVE FOR ALL TO PUBLIC "
                f"USING {_predicate(table, owner, connection=connection)} "
                f"WITH CHECK {_predicate(table, owner, connection=connection)}"
            )
            cursor.execute(
                f"COMMENT ON POLICY {policy} ON {qt} IS {_literal(_signature(table, owner))}"
            )
    return [t.table for t in stale]


def rls_problems(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Human-readable problems: a tenant table without RLS, not forced, with a stale or
    missing policy, with an extra policy that could widen access, or missing entirely."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return []
    wanted = tenant_tables()
    state = rls_state(using=using, tables=[t.table for t in wanted])
    problems: list[str] = []
    for table in wanted:
        current = state.get(table.table)
        if current is None:
            problems.append(f"{table.table}: table missing (migrations not applied?)")
            continue
        if not current.enabled:
            problems.append(f"{table.table}: row level security not enabled")
        if not current.forced:
            problems.append(f"{table.table}: row level security not forced")
        if current.signature != _signature(table, current.owner):
            problems.append(f"{table.table}: policy {POLICY_NAME} missing or out of date")
        if current.other_policies:
            problems.append(f"{table.table}: extra policies {', '.join(current.other_policies)}")
    with connection.cursor() as cursor:
        if not _functions_current(cursor):
            problems.append("tenant lookup functions missing or out of date")
    return problems


def post_migrate_apply(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """post_migrate receiver: keep row-level security in step with the schema."""
    rls_apply(using=using)
