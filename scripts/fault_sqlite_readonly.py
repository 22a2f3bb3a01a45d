"""Fault script: a SQLite file made read-only, then writable again (issue 18).

Runs the real request path in process (Django's test client over the WSGI handler, every
middleware) against a fresh file database in a temporary directory, and prints one JSON
line of figures:

- while read-only: what /health, POST /payment-failed and a signed Stripe delivery answer
  (expected: JSON 503 `database_unavailable` with Retry-After, /health 503);
- after the file is writable again: seconds until the first write is accepted
  (expected: the first request; issue 18 measured 60 s, the persistent connection's age).

The file is made read-only with `chattr +i` when running as root (root ignores file
modes) and `chmod 0444` otherwise. A connection opened while the file is read-only is
what stays read-only, so the script closes the connection once after the change, as a
new worker thread or a CONN_MAX_AGE recycle would. Exit status 0 when every expectation
holds. Usage: `.venv/bin/python scripts/fault_sqlite_readonly.py`
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRIPE_SECRET = "whsec_fault_script_secret"


def _setup_env(workdir: Path) -> Path:
    db = workdir / "db.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "paypilot.settings"
    os.environ.setdefault("PAYPILOT_LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    return db


def _read_only(db: Path, on: bool) -> str:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if on else "-i", str(db)], check=True, capture_output=True)
        return "chattr"
    db.chmod(0o444 if on else 0o644)
    return "chmod"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pp_sqlite_ro_") as tmp:
        db = _setup_env(Path(tmp))
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client

        from integrations.providers import stripe as stripe_adapter
        from integrations.services import credential_set
        from paypilot.services import tenant_create, token_issue

        call_command("migrate", verbosity=0, interactive=False)
        tenant = tenant_create(slug="rofault", name="Read-only fault")
        credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
        token = token_issue(tenant=tenant, role="integrator").plaintext
        client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {token}")
        counter = iter(range(1, 1_000_000))

        def pay() -> tuple[int, dict, str]:
            # With an Idempotency-Key the answer is stored: a write (without one, none).
            n = next(counter)
            body = {"customer_id": f"cust_{n}", "amount": 10, "currency": "usd", "failure_code": "card_expired"}
            r = client.post("/payment-failed", data=json.dumps(body), content_type="application/json",
                            headers={"Idempotency-Key": f"ro-fault-{n}"})
            return r.status_code, json.loads(r.content), r.headers.get("Retry-After", "")

        def decide() -> tuple[int, dict, str]:
            body = {"invoice_id": f"in_{next(counter)}", "failure_code": "card_expired"}
            r = client.post("/decide", data=json.dumps(body), content_type="application/json")
            return r.status_code, json.loads(r.content), r.headers.get("Retry-After", "")

        def hook() -> tuple[int, dict, str]:
            n = next(counter)
            body = json.dumps({"id": f"evt_ro_{n}", "type": "invoice.paid", "data": {"object": {"id": f"in_{n}"}}})
            sig = stripe_adapter.sign(body=body.encode(), secret=STRIPE_SECRET)
            r = client.post("/t/rofault/webhooks/stripe", data=body, content_type="application/json",
                            headers={"Stripe-Signature": sig})
            return r.status_code, json.loads(r.content), r.headers.get("Retry-After", "")

        def health() -> int:
            return client.get("/health").status_code

        def writes_accepted() -> bool:
            return pay()[0] == 200 and decide()[0] == 200

        figures: dict[str, object] = {"before": {"payment_failed": pay()[0], "health": health()}}
        try:
            figures["method"] = _read_only(db, True)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(json.dumps({"skipped": f"cannot make the file read-only: {exc}"}))
            return 0
        try:
            connection.close()  # the next connection is opened on the read-only file
            status, body, retry = pay()
            w_status, w_body, w_retry = hook()
            d_status, d_body, d_retry = decide()
            figures["read_only"] = {
                "health": health(),
                "decide": [d_status, d_body.get("error"), d_retry],
                "payment_failed": [status, body.get("error"), retry],
                "webhook": [w_status, w_retry, w_body.get("error")],
            }
            # A second request on the same (now failed) thread: still 503, still JSON.
            figures["read_only"]["payment_failed_again"] = pay()[0]  # type: ignore[index]
        finally:
            _read_only(db, False)
        restored = time.monotonic()
        waited, attempts = None, 0
        while time.monotonic() - restored < 90:
            attempts += 1
            if writes_accepted():
                waited = round(time.monotonic() - restored, 3)
                break
            time.sleep(0.1)
        figures["after"] = {"seconds_until_write_accepted": waited, "attempts": attempts,
                            "health": health(), "webhook": hook()[0]}
    ro = figures["read_only"]
    ok = (
        figures["before"] == {"payment_failed": 200, "health": 200}
        and ro["health"] == 503  # type: ignore[index]
        and ro["payment_failed"] == [503, "database_unavailable", ro["payment_failed"][2]]  # type: ignore[index]
        and ro["payment_failed"][2].isdigit()  # type: ignore[index]
        and ro["decide"][0] == 503 and ro["decide"][2].isdigit()  # type: ignore[index]
        and ro["webhook"][0] == 503 and ro["webhook"][2] == "database_unavailable"  # type: ignore[index]
        and waited is not None and waited < 5
        and figures["after"]["health"] == 200 and figures["after"]["webhook"] == 200  # type: ignore[index]
    )
    figures["ok"] = ok
    print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
