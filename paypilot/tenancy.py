"""The tenant a database transaction serves: `app.tenant_id`, read by the PostgreSQL
row-level security policies that `paypilot.rls` installs on every tenant table.

The setting is transaction-local (`set_config(..., true)`): it vanishes at COMMIT or
ROLLBACK, so a pooled connection (Django's persistent connections, or a transaction-mode
pgbouncer) never carries one tenant into the next request. The price is that it only
works inside a transaction, which is why:

- `TenantTransactionMiddleware` runs each request's view inside `transaction.atomic()` on
  PostgreSQL, and binds the tenant named in the URL (`/t/<tenant>/...`);
- bearer-token authentication binds the token's tenant (`bind_token_tenant`) before the
  token row itself can be read, through a SECURITY DEFINER function, because the token
  table is tenant-scoped too;
- `tenant_context(tenant_id)` opens the transaction itself, for tasks and commands;
- `@tenant_task(Model)` wraps a django-q2 task taking a row id: it finds that row's tenant
  (again through a SECURITY DEFINER function) and runs the task inside `tenant_context`;
- a logged-in staff user's tenant (their admin membership) is bound the same way.

On SQLite every function here is a no-op (there is no row-level security to feed).
Why the policies let the table owner through, and what that means for admins, commands and
tests, is written down in docs/deploy.md ("Row-level security").
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, ParamSpec, TypeVar

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, models, transaction
from django.http import HttpRequest, HttpResponse

TENANT_SETTING = "app.tenant_id"
TOKEN_TENANT_FUNCTION = "paypilot_token_tenant"
ROW_TENANT_FUNCTION = "paypilot_row_tenant"
PLATFORM_AUDIT_FUNCTION = "paypilot_audit_platform"

P = ParamSpec("P")
R = TypeVar("R")
TenantRef = int | models.Model | None


class TenantContextError(RuntimeError):
    """The tenant was set where it cannot last: outside a transaction on PostgreSQL."""


def _tenant_pk(tenant: TenantRef) -> int | None:
    if tenant is None:
        return None
    value = tenant.pk if isinstance(tenant, models.Model) else tenant
    return int(value)


def _uses_rls(using: str) -> bool:
    return connections[using].vendor == "postgresql"


def set_current_tenant(tenant: TenantRef, *, using: str = DEFAULT_DB_ALIAS) -> None:
    """Bind `tenant` (a Tenant, its id, or None for "no tenant") for the rest of the
    current transaction. Raises TenantContextError outside a transaction on PostgreSQL,
    where the setting would silently disappear after the next statement."""
    if not _uses_rls(using):
        return
    connection = connections[using]
    if not connection.in_atomic_block:
        raise TenantContextError("set_current_tenant() needs a transaction; use tenant_context()")
    pk = _tenant_pk(tenant)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config(%s, %s, true)", [TENANT_SETTING, "" if pk is None else str(pk)]
        )


def current_tenant_id(*, using: str = DEFAULT_DB_ALIAS) -> int | None:
    """The tenant bound to the current transaction (always None on SQLite)."""
    if not _uses_rls(using):
        return None
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT NULLIF(current_setting(%s, true), '')", [TENANT_SETTING])
        value = cursor.fetchone()[0]
    return int(value) if value else None


@contextmanager
def tenant_context(tenant: TenantRef, *, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Run the block in a transaction bound to `tenant`.

    Nested inside another transaction it restores the outer tenant on the way out; on an
    exception the savepoint rollback restores it (PostgreSQL undoes `set_config` with the
    subtransaction)."""
    # Outermost block: COMMIT/ROLLBACK clears the setting, nothing to restore.
    nested = connections[using].in_atomic_block
    with transaction.atomic(using=using):
        if not _uses_rls(using):
            yield
            return
        previous = current_tenant_id(using=using) if nested else None
        set_current_tenant(tenant, using=using)
        yield
        if nested:
            set_current_tenant(previous, using=using)


def tenant_for_row(
    model: type[models.Model], value: Any, *, field: str = "pk", using: str = DEFAULT_DB_ALIAS
) -> int | None:
    """The tenant id of the row of tenant table `model` whose unique `field` equals
    `value`, readable before any tenant is bound.

    On PostgreSQL this goes through the SECURITY DEFINER function installed by
    `paypilot.rls`, which answers only for tables carrying the tenant policy and only by a
    single-column unique key."""
    model_field = model._meta.pk if field == "pk" else model._meta.get_field(field)
    if not isinstance(model_field, models.Field):
        raise ValueError(f"{model._meta.label}.{field} is not a concrete column")
    if not _uses_rls(using):
        rows = model._default_manager.using(using).filter(**{model_field.attname: value})
        return rows.values_list("tenant_id", flat=True).first()
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT {ROW_TENANT_FUNCTION}(%s::regclass, %s, %s)",
            [model._meta.db_table, model_field.column, str(value)],
        )
        found = cursor.fetchone()[0]
    return int(found) if found is not None else None


def bind_token_tenant(prefix: str, *, request: Any = None, using: str = DEFAULT_DB_ALIAS) -> int | None:
    """Bind the tenant owning the API token with `prefix`, so the token row can be read.

    Returns the tenant id, or None when no token has that prefix (then no tenant is bound
    and the lookup that follows finds nothing). Outside a transaction nothing can be bound:
    under row-level security the lookup then fails closed."""
    if not _uses_rls(using) or not connections[using].in_atomic_block:
        return None
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT set_config(%s, COALESCE({TOKEN_TENANT_FUNCTION}(%s)::text, ''), true)",
            [TENANT_SETTING, prefix],
        )
        value = cursor.fetchone()[0]
    bound = int(value) if value else None
    if request is not None:
        request._paypilot_tenant_bound = bound
    return bound


def platform_audit_insert(*, event: str, actor: str, detail: dict[str, Any]) -> Any:
    """Append a tenant-less (platform) audit event on PostgreSQL; None elsewhere.

    Such rows are invisible to the application role, and an INSERT ... RETURNING (what the
    ORM sends) must pass the read policy too, so the row goes in through a SECURITY DEFINER
    function that can only ever write tenant NULL."""
    if not _uses_rls(DEFAULT_DB_ALIAS):
        return None
    from django.utils import timezone

    from paypilot.models import AuditEvent

    created_at = timezone.now()
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"SELECT {PLATFORM_AUDIT_FUNCTION}(%s, %s, %s::jsonb, %s)",
            [event, actor, json.dumps(detail), created_at],
        )
        pk = cursor.fetchone()[0]
    return AuditEvent(pk=pk, event=event, tenant=None, actor=actor, detail=detail, created_at=created_at)


def bind_request_tenant(request: Any, tenant: TenantRef) -> None:
    """Bind `tenant` for this request's transaction once (the auth path calls it twice)."""
    pk = _tenant_pk(tenant)
    if getattr(request, "_paypilot_tenant_bound", object()) == pk:
        return
    connection = connections[DEFAULT_DB_ALIAS]
    if _uses_rls(DEFAULT_DB_ALIAS) and not connection.in_atomic_block:
        return  # a view called without the middleware: RLS fails closed on its own
    set_current_tenant(pk)
    request._paypilot_tenant_bound = pk


def tenant_task(model: type[models.Model]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a task whose first argument is the pk of a `model` row: the task runs
    inside `tenant_context(<that row's tenant>)`. A missing row runs with no tenant bound,
    so the task sees nothing, as it would for a deleted row."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with tenant_context(tenant_for_row(model, args[0])):
                return func(*args, **kwargs)

        return wrapper

    return decorate


# --- the request path ---------------------------------------------------------------------

V = TypeVar("V", bound=Callable[..., Any])


def view_binds_tenant(view: V) -> V:
    """Mark a view that binds its own tenant before its first tenant-scoped query: the
    middleware then skips the resolvers, whose URL-tenant lookup and set_config would be
    two wasted round trips per request (the webhook inbox)."""
    view.paypilot_binds_tenant = True  # type: ignore[attr-defined]
    return view


RequestTenantResolver = Callable[[HttpRequest, dict[str, Any]], TenantRef]
_resolvers: list[RequestTenantResolver] = []


def register_request_tenant_resolver(resolver: RequestTenantResolver) -> RequestTenantResolver:
    """Add a function (request, view_kwargs) -> tenant|None consulted before each view, e.g.
    the admin user's tenant. The first non-None answer is bound. Usable as a decorator."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)
    return resolver


def _tenant_from_url(request: HttpRequest, view_kwargs: dict[str, Any]) -> TenantRef:
    slug = view_kwargs.get("tenant") or view_kwargs.get("tenant_slug")
    if not isinstance(slug, str):
        return None
    from paypilot.models import Tenant  # the Tenant table itself is not tenant-scoped

    return Tenant.objects.filter(slug=slug).values_list("pk", flat=True).first()


def _tenant_from_admin_membership(request: HttpRequest, view_kwargs: dict[str, Any]) -> TenantRef:
    """A staff user's tenant (paypilot.admin_tenancy), found without reading the
    tenant-scoped membership table first. Platform admins have none: see docs/deploy.md."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_staff:
        return None
    try:
        # request.user is a SimpleLazyObject: ask the user model, not type(user).
        accessor: Any = get_user_model()._meta.get_field("admin_membership")
    except FieldDoesNotExist:
        return None
    return tenant_for_row(accessor.related_model, user.pk, field=accessor.field.name)


# Paths whose view opens its own transaction (and binds its tenant) only when it needs one:
# the webhook inbox, so a refused flood (bad signatures past the limit) costs no database
# round trip at all, not even an empty transaction. Registered by the app owning the view.
_own_transaction_paths: list[re.Pattern[str]] = []


def register_own_transaction_path(pattern: str) -> None:
    compiled = re.compile(pattern)
    if compiled not in _own_transaction_paths:
        _own_transaction_paths.append(compiled)


register_request_tenant_resolver(_tenant_from_url)
register_request_tenant_resolver(_tenant_from_admin_membership)


class TenantTransactionMiddleware:
    """On PostgreSQL, run each view in one transaction so the tenant bound by the URL, the
    bearer token or a registered resolver holds until the response is built. Writes commit
    as they did under autocommit (a 4xx/5xx answer does not roll back audit rows); an
    exception escaping the handler rolls the transaction back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not _uses_rls(DEFAULT_DB_ALIAS) or any(p.match(request.path_info) for p in _own_transaction_paths):
            return self.get_response(request)
        stack = ExitStack()
        try:
            stack.enter_context(transaction.atomic())
        except DatabaseError:
            # Database unreachable: let the view answer its own way (/health says 503).
            return self.get_response(request)
        with stack:
            return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> None:
        if not _uses_rls(DEFAULT_DB_ALIAS) or getattr(view_func, "paypilot_binds_tenant", False):
            return None
        for resolver in _resolvers:
            tenant = resolver(request, view_kwargs)
            if tenant is not None:
                bind_request_tenant(request, tenant)
                break
        return None
