"""Admin login lockout: failed logins counted per account and per client address.

Django's admin has no lockout of its own. django-axes would do it, but it brings its own
models, middleware and authentication backend for two counters; this uses the counters
the rate limits already share across processes (paypilot.ratelimit) instead. A lock is
checked before the password is, so a locked account costs no password hash, and the
person sees why they cannot get in. Failed logins and each new lock are audited (user
names only as salted hashes); attempts refused while locked are counted, not written, so
a flood against a locked account adds no rows.
"""

from __future__ import annotations

import math
import time

from django.conf import settings

from paypilot.ratelimit import client_key, client_prefix, counter_hit, counter_peek, counter_reset
from paypilot.services import audit_record, pii_hash

LOCKED_ACCOUNT = "account_locked"  # too many failures for this user name
LOCKED_ADDRESS = "address_locked"  # too many failures from this client address


def _keys(username: str, client: str) -> list[tuple[str, str, int]]:
    # casefold: "Admin" and "admin" are one account to an attacker guessing passwords.
    return [
        (LOCKED_ACCOUNT, f"login:acct:{username.casefold()}", settings.PAYPILOT_LOGIN_FAILURES_PER_ACCOUNT),
        (LOCKED_ADDRESS, f"login:ip:{client_key(client)}", settings.PAYPILOT_LOGIN_FAILURES_PER_IP),
    ]


def login_lockout_check(*, username: str, client: str, now: float | None = None) -> tuple[str, int] | None:
    """(reason, seconds left) when this account or address is locked now, else None.

    Failures count in fixed windows; a window that reached the limit locks to the end of
    the window after it, so a lock lasts at least one whole window (never the few seconds
    left when the limit was reached late in one) and at most two."""
    window = settings.PAYPILOT_LOGIN_LOCKOUT_SECONDS
    now = time.time() if now is None else now
    for reason, key, limit in _keys(username, client):
        if not limit:
            continue
        current = counter_peek(key, window=window, now=now)
        if current.count >= limit:
            return reason, current.retry_after + window
        if counter_peek(key, window=window, now=now - window).count >= limit:
            return reason, current.retry_after
    return None


def login_failure_record(*, username: str, client: str) -> None:
    """Count one failed login for the account and the address; audit it, and audit the
    lock when this failure is the one that reaches a limit."""
    window = settings.PAYPILOT_LOGIN_LOCKOUT_SECONDS
    detail = {"subject_hash": pii_hash(username.casefold()), "client": client_prefix(client)}
    audit_record(event="paypilot.admin.login_failed", actor="anonymous", detail=detail)
    for reason, key, limit in _keys(username, client):
        if limit and counter_hit(key, window=window).count == limit:
            audit_record(event="paypilot.admin.login_locked", actor="anonymous",
                         detail={**detail, "reason": reason, "count": limit})


def login_success_record(*, username: str) -> None:
    """A correct password clears the account's failures (not the address's: one good
    account must not reset a spray over many)."""
    counter_reset(f"login:acct:{username.casefold()}", window=settings.PAYPILOT_LOGIN_LOCKOUT_SECONDS)


def lockout_message(*, reason: str, seconds: int) -> str:
    who = "this account" if reason == LOCKED_ACCOUNT else "this address"
    minutes = max(1, math.ceil(seconds / 60))
    return (f"Too many failed sign-ins for {who}. Sign-in is locked; try again in "
            f"{minutes} minute{'s' if minutes != 1 else ''}.")
