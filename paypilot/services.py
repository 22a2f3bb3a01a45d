"""Core writes: audit events, tenants and API tokens."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from paypilot.bulk import rows_insert_json, values_insert
from paypilot.models import ApiToken, AuditEvent, Role, Tenant
from paypilot.tenancy import platform_audit_insert

logger = logging.getLogger("paypilot.audit")

TOKEN_PREFIX_BYTES = 5  # 10 hex characters: public, used for lookup
TOKEN_SECRET_BYTES = 32
_warned_unsalted = False


def pii_hash(value: str) -> str:
    """Salted SHA-256 of a personal value (email, external id) for audit and logs."""
    global _warned_unsalted
    salt = settings.PAYPILOT_PII_SALT
    if not salt and not _warned_unsalted:
        _warned_unsalted = True
        logger.warning("PAYPILOT_PII_SALT is unset: personal values are hashed without a salt")
    return hashlib.sha256(f"{salt}:{value}".encode()).hexdigest()[:32]


# Keys an audit detail may carry: ids, codes, counts, hashes. Anything else is dropped so a
# careless caller cannot put a name, an email or a request body into the permanent log.
AUDIT_DETAIL_ALLOWLIST = frozenset(
    {
        "reason", "gate", "role", "token_prefix", "client", "path", "method", "status",
        "invoice_id", "invoice", "customer", "draft", "approval", "send", "decision",
        "event_id", "webhook_event", "provider", "rule_fired", "rules_version", "from_state",
        "to_state", "cause", "model", "prompt_hash", "verdict", "fallback_used", "count",
        "counts", "subject_hash", "tenant", "operation", "arm", "kind", "note_hash",
        "action", "slug", "status_from", "status_to", "refusal", "dry_run", "attempt",
        "refusal_id", "route",
        "amount_minor", "currency", "locale", "source", "edited", "approver", "approvals",
        # ledger inputs (issue 12): refunds, inconsistencies, provider-time corrections
        "refunded_minor", "recovered_minor", "expected_currency", "received_currency",
        "inconsistency", "state", "failed_at_from", "failed_at_to",
        # reconciliation: files, runs, breaks, digests
        "recon_file", "recon_run", "recon_break", "sha256", "input_digest", "as_of", "version",
        "recon_proposal", "effective_from",  # contract proposals: which one, and from when it applies
        "recon_dispute",  # a dispute row stored from a provider webhook (issue 14)
        # tenant rule versions (issue 15)
        "previous_version",
        "holdout_from", "holdout_to",  # a tenant's holdout {pct, start} before and after a change
        "digest", "frequency", "period_start",  # the approvers' digest (approvals/digest.py)
        "fields",  # names of the fields a change touched (a tenant's email branding)
        "batch",  # the number of a retention purge's batch (operations/retention.py)
    }
)


def audit_record(
    *,
    event: str,
    tenant: Tenant | None = None,
    actor: str = "system",
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event. Call inside the transaction of the change it records."""
    entry = audit_entry(event=event, tenant=tenant, actor=actor, detail=detail)
    if tenant is None:  # platform event: see paypilot.tenancy.platform_audit_insert
        platform = platform_audit_insert(event=event, actor=entry.actor, detail=entry.detail)
        if platform is not None:
            return platform
    entry.save(force_insert=True)
    return entry


def audit_entry(
    *,
    event: str,
    tenant: Tenant | int | None = None,
    actor: str = "system",
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """An unsaved audit event with its detail filtered through the allowlist: what
    `audit_record` saves."""
    values = audit_values(event=event, tenant=None, actor=actor, detail=detail)
    tenant_ref: dict[str, Any] = {"tenant": tenant} if not isinstance(tenant, int) else {"tenant_id": tenant}
    del values["tenant_id"]
    return AuditEvent(**values, **tenant_ref)


def audit_values(
    *,
    event: str,
    tenant: Tenant | int | None,
    actor: str = "system",
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One audit row as a plain dict for `audit_record_many`: the detail filtered through
    the allowlist, the actor cut to its column; `created_at` is set when it is written."""
    clean = {k: v for k, v in (detail or {}).items() if k in AUDIT_DETAIL_ALLOWLIST}
    if len(clean) != len(detail or ()):
        dropped = sorted(set(detail or {}) - set(clean))
        logger.warning("audit detail keys dropped for %s: %s", event, ",".join(dropped))
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    return {"event": event, "tenant_id": tenant_id, "actor": actor[:100], "detail": clean}


def audit_record_many(rows: list[dict[str, Any]]) -> list[int]:
    """Append many tenant audit events (dicts from `audit_values`) in one INSERT, inside the
    caller's transaction: the batch form of `audit_record` for one change per row. Returns
    their ids in order. Raises ValueError for a platform event (no tenant): those go through
    `audit_record` one by one. No instance is built: the rows are only written (the table
    is append-only, its triggers refuse any later UPDATE or DELETE)."""
    if any(row["tenant_id"] is None for row in rows):
        raise ValueError("platform audit events go through audit_record one by one")
    return values_insert(AuditEvent, rows)


def rows_insert(rows: Sequence[models.Model]) -> None:
    """Insert new rows of one model, their ids set: a plain INSERT for one row (the single
    services' path), one multi-row INSERT for several (both backends return the ids; on
    PostgreSQL through one JSON document, see paypilot.bulk)."""
    if len(rows) == 1:
        rows[0].save(force_insert=True)
    elif rows and not rows_insert_json(rows):
        type(rows[0])._default_manager.bulk_create(rows)


# --- tenants ------------------------------------------------------------------------------

def tenant_create(*, slug: str, name: str, actor: str = "system") -> Tenant:
    with transaction.atomic():
        tenant = Tenant.objects.create(slug=slug, name=name)
        audit_record(event="paypilot.tenant.created", tenant=tenant, actor=actor, detail={"slug": slug})
    return tenant


def tenant_set_status(*, tenant: Tenant, status: str, actor: str = "system") -> bool:
    """Move a tenant to `status`; returns False when it already was there. Audited."""
    if status not in Tenant.Status.values:
        raise ValueError(f"unknown tenant status: {status}")
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        if locked.status == status:
            return False
        if locked.status == Tenant.Status.DEACTIVATED:
            raise ValueError("a deactivated tenant cannot be changed")
        previous = locked.status
        locked.status = status
        locked.save(update_fields=["status"])
        audit_record(
            event=f"paypilot.tenant.{status}",
            tenant=locked,
            actor=actor,
            detail={"status_from": previous, "status_to": status},
        )
    tenant.status = status
    return True


# Apps below the core that hold work held back while a tenant was suspended register a
# drafter here (integrations: failures recorded but not drafted); the core cannot import
# them. Each is called as drafter(tenant=..., actor=...) and returns how many it drafted.
OpenFailureDrafter = Callable[..., int]
_open_failure_drafters: dict[str, OpenFailureDrafter] = {}


def register_open_failure_drafter(name: str, drafter: OpenFailureDrafter) -> None:
    _open_failure_drafters[name] = drafter


def tenant_resume(*, tenant: Tenant, draft_open: bool = False, actor: str = "system") -> tuple[bool, dict[str, int]]:
    """Make a suspended tenant active again; returns (status changed, drafts opened per app).

    Nothing recorded during the suspension is drafted unless `draft_open` is set; then each
    registered drafter drafts through its normal pipeline, audited by the drafter. Safe to
    run again on an active tenant (it drafts only what is still waiting). Raises ValueError
    for a deactivated tenant.
    """
    changed = tenant_set_status(tenant=tenant, status=Tenant.Status.ACTIVE, actor=actor)
    drafted: dict[str, int] = {}
    if draft_open:
        for name, drafter in _open_failure_drafters.items():
            drafted[name] = drafter(tenant=tenant, actor=actor)
    return changed, drafted


# --- tokens -------------------------------------------------------------------------------

@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    plaintext: str  # shown once, never stored


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_issue(*, tenant: Tenant, role: str, label: str = "", actor: str = "system") -> IssuedToken:
    """Create a token; the plaintext `pp_<prefix>_<secret>` is returned once and never stored."""
    if role not in Role.values:
        raise ValueError(f"unknown role: {role}")
    prefix = secrets.token_hex(TOKEN_PREFIX_BYTES)
    secret = secrets.token_urlsafe(TOKEN_SECRET_BYTES)
    with transaction.atomic():
        token = ApiToken.objects.create(
            tenant=tenant, role=role, label=label, prefix=prefix, secret_hash=_hash_secret(secret)
        )
        audit_record(
            event="paypilot.token.issued",
            tenant=tenant,
            actor=actor,
            detail={"token_prefix": prefix, "role": role},
        )
    return IssuedToken(token=token, plaintext=f"pp_{prefix}_{secret}")


def token_revoke(*, token: ApiToken, actor: str = "system") -> bool:
    with transaction.atomic():
        updated = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if updated:
            audit_record(
                event="paypilot.token.revoked",
                tenant=token.tenant,
                actor=actor,
                detail={"token_prefix": token.prefix},
            )
    return bool(updated)


def token_parse(plaintext: str) -> tuple[str, str] | None:
    """Split `pp_<prefix>_<secret>`; None when it is not shaped like one of ours."""
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != "pp" or len(parts[1]) != TOKEN_PREFIX_BYTES * 2:
        return None
    return parts[1], parts[2]


def token_verify(*, token: ApiToken, secret: str) -> bool:
    return hmac.compare_digest(token.secret_hash, _hash_secret(secret))


def token_touch(*, token: ApiToken) -> None:
    """Record use, at most once a minute per token, so auth stays a read on the hot path."""
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
