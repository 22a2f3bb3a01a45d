"""`manage.py demo_webhooks --tenant T --count N [--rate R] [--url URL] [--provider P]`: signed
deliveries of realistic shapes, received in process or POSTed to a running server."""

from __future__ import annotations

import json
import random
import secrets
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from integrations.demo import PROVIDERS, Delivery, demo_credentials_ensure, demo_deliveries, receive
from paypilot.models import Tenant


class Command(BaseCommand):
    help = ("Stream N signed webhook deliveries (failures, and on Stripe some paid or cancelled) to the tenant: "
            "in process through the webhook service, or to a running server with --url.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--rate", type=float, default=0.0, help="deliveries per second (default: no limit)")
        parser.add_argument("--url", default="", help="base URL of a running PayPilot, e.g. http://127.0.0.1:8000")
        parser.add_argument("--provider", choices=PROVIDERS, default="stripe")
        parser.add_argument("--seed", type=int, default=None, help="repeatable shapes (ids still differ per run)")

    def handle(self, *args: Any, tenant: str, count: int, rate: float, url: str, provider: str,
               seed: int | None, **options: Any) -> None:
        if count < 1:
            raise CommandError("--count must be at least 1")
        if rate < 0:
            raise CommandError("--rate must not be negative")
        target = Tenant.objects.filter(slug=tenant).first()
        if target is None:
            raise CommandError(f"no tenant {tenant!r}")
        # A secret is stored only where the tenant has none; an existing one signs the deliveries.
        demo_credentials_ensure(tenant=target, providers=(provider,))
        rng = random.Random(seed)
        run_id = secrets.token_hex(3)
        statuses: Counter[str] = Counter()
        started = time.monotonic()
        deliveries = demo_deliveries(tenant=target, provider=provider, count=count, rng=rng, run_id=run_id)
        for number, delivery in enumerate(tqdm(deliveries, total=count, disable=None, desc="deliveries")):
            if rate:
                wait = started + number / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            statuses[self._send(target, delivery, url)] += 1
        elapsed = time.monotonic() - started
        self.stdout.write(json.dumps({
            "tenant": tenant, "provider": provider, "run": run_id, "sent": count, "seconds": round(elapsed, 2),
            "statuses": dict(sorted(statuses.items())), "target": url or "in-process",
        }))
        if any(not status.startswith("2") for status in statuses):
            raise CommandError("some deliveries were not accepted (statuses above)")

    @staticmethod
    def _send(tenant: Tenant, delivery: Delivery, url: str) -> str:
        if not url:
            return str(receive(tenant=tenant, delivery=delivery).status)
        request = urllib.request.Request(
            url.rstrip("/") + delivery.path, data=delivery.body, method="POST",
            headers={"Content-Type": "application/json", **delivery.headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - the operator's own URL
                return str(answer.status)
        except urllib.error.HTTPError as exc:
            return str(exc.code)
        except urllib.error.URLError as exc:
            raise CommandError(f"cannot reach {url}: {exc.reason}") from exc
