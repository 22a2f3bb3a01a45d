"""Fault drill: kill the worker, stop the database, break the email backend; count losses.

Three drills per database (a fresh one each: SQLite in a temporary directory, or a
PostgreSQL database of its own, created and dropped here), against the real processes
(`granian` serving the WSGI app on 127.0.0.1:PORT, `manage.py qcluster` workers):

1. worker: signed Stripe `invoice.payment_failed` deliveries arrive at a steady rate while
   the whole qcluster process group is SIGKILLed at random moments and restarted. Then every
   delivery must be stored once, processed once, and have made one invoice, one failure
   transition, one draft and one approval request.
2. sends: approved drafts are sent through a slow, failing email backend
   (`scripts/fault_drill_mail.py`: refusals before acceptance, answers lost after it) while
   the qcluster is SIGKILLed at random moments. Then the clock is moved past the claim
   timeout and the retry backoff (the services take `now`; nothing waits 30 minutes) and the
   tick's work runs until nothing changes. No message may reach the provider twice, none may
   be left `sending`, and every "delivery unknown" is settled the way a person would: found in
   the provider's log -> mark sent, not found -> resend. After that every approval must have
   reached the provider exactly once.
3. database: deliveries arrive while the database is unreachable (PostgreSQL: the app talks
   to it through a TCP proxy on loopback that is stopped, never the server itself; SQLite:
   another process holds the write lock past the busy timeout). Each must get a non-2xx
   answer (or be stored: a 200 with nothing stored is a loss); deliveries are retried the way
   providers do, and the same server and workers must take them once the database is back,
   without a restart.

Prints the figures and one JSON line per database; exits 1 on any loss, duplicate, stuck
send or 2xx-without-storage. Broker locks of tasks held by a killed worker are moved to
"now" rather than waiting PAYPILOT_Q_TIMEOUT + 30 s for django-q2 to re-present them.

Usage: .venv/bin/python scripts/fault_drill.py [--db sqlite|postgres|both] [--events 400]
       [--sends 60] [--kills 6] [--seed N] [--port 8105]
PostgreSQL: FAULT_DRILL_PG_URL (default postgres://postgres@127.0.0.1:5432/pp_fault_drill;
the run's database is that name + "_<pid>", created here and dropped at the end).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SECRET = "whsec_drill_" + uuid.uuid4().hex
BODY = (ROOT / "bench" / "webhook_stripe_body.json").read_text().strip()


# --- processes --------------------------------------------------------------------------

class Proc:
    """A child in its own process group, so a kill takes the whole tree (qcluster forks)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args, self.env, self.log = args, env, log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        """A graceful stop: SIGTERM to the leader only (qcluster stops its workers after
        their current task); SIGKILL to the group if it has not ended in 30 s."""
        if self.popen is None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)  # the group this script created, by its id
        except ProcessLookupError:
            pass
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self.popen = None


def _tasks_taken_since(started: Any) -> int:
    """Queue rows a worker took after `started` and has not finished: a row taken at t is
    locked until t + retry, so those are the rows locked beyond started + retry."""
    from django.conf import settings
    from django.db import connection
    from django_q.models import OrmQ

    try:
        return OrmQ.objects.filter(lock__gt=started + timedelta(seconds=settings.Q_CLUSTER["retry"])).count()
    finally:
        connection.close()  # this runs in the killer's thread


class Killer(threading.Thread):
    """`kills` times: wait until the cluster holds tasks (work in flight), wait a random
    0-`jitter` s more, SIGKILL the whole cluster, restart it at once."""

    def __init__(self, cluster: Proc, kills: int, rng: random.Random, jitter: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.kills, self.rng, self.jitter = cluster, kills, rng, jitter
        self.done = 0
        self.held_at_kill: list[int] = []
        self.re_presented = 0

    def run(self) -> None:
        from django.db import connection
        from django.utils import timezone

        started = timezone.now()
        for _ in range(self.kills):
            deadline = time.monotonic() + 5
            while not _tasks_taken_since(started) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(self.rng.uniform(0.0, self.jitter))
            self.held_at_kill.append(_tasks_taken_since(started))
            self.cluster.kill()
            self.done += 1
            # What the killed workers held comes back at once (django-q2 would wait `retry`
            # seconds), so the next kill can land on a re-run of the same work.
            self.re_presented += _queue_fast_forward()
            connection.close()
            time.sleep(self.rng.uniform(0.0, 0.3))
            started = timezone.now()
            self.cluster.start()


class TcpProxy:
    """127.0.0.1:listen -> 127.0.0.1:target. stop() closes the port and every connection, so
    the app sees the database vanish (refused, reset) while the server itself keeps running."""

    def __init__(self, listen: int, target: int) -> None:
        self.listen, self.target = listen, target
        self.server: socket.socket | None = None
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()

    def start(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.listen))
        server.listen(64)
        self.server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.conns = []


# --- deliveries -------------------------------------------------------------------------

def delivery(n: int) -> tuple[str, bytes]:
    """A signed-to-be Stripe invoice.payment_failed with unique event, invoice and customer."""
    ev, cus = uuid.uuid4().hex, uuid.uuid4().hex
    body = (BODY.replace("{uuid}", ev).replace("{uuid2}", cus).replace("{ts}", str(int(time.time())))
            .replace("{n}", str(n)).replace("billing@example.com", f"c{n}-{cus[:6]}@drill.example"))
    return f"evt_{ev}", body.encode()


def post(port: int, body: bytes, timeout: float = 40.0) -> int:
    """POST one delivery as Stripe would; the status, or 0 when no answer came."""
    ts = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/t/drill/webhooks/stripe", body=body,
                     headers={"Content-Type": "application/json", "Stripe-Signature": f"t={ts},v1={mac}"})
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_http(port: int, proc: Proc) -> None:
    for _ in range(150):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server did not start; see {proc.log}")


# --- the child: one database ------------------------------------------------------------

def _queue_fast_forward() -> int:
    """Tasks a killed worker held: make them due now, as django-q2 would after `retry` s."""
    from django.utils import timezone
    from django_q.models import OrmQ

    return OrmQ.objects.filter(lock__gt=timezone.now()).update(lock=timezone.now() - timedelta(seconds=1))


def _drain(*, timeout: float) -> bool:
    """Wait until no event is left to process and the queue is empty."""
    from django_q.models import OrmQ

    from integrations.models import WebhookEvent

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _queue_fast_forward()
        left = WebhookEvent.objects.filter(status__in=["received", "failed"]).count()
        if left == 0 and not OrmQ.objects.exists():
            return True
        time.sleep(0.2)
    return False


def drill_worker(ctx: dict[str, Any], args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from django.db.models import Count

    from approvals.models import ApprovalRequest
    from dunning.models import Draft
    from integrations.models import WebhookEvent
    from ledger.models import Invoice, InvoiceTransition

    cluster: Proc = ctx["cluster"]
    cluster.start()
    killer = Killer(cluster, args.kills, rng, jitter=0.8)
    killer.start()
    acked: dict[str, int] = {}
    bodies = [delivery(n) for n in range(args.events)]

    def send(item: tuple[str, bytes]) -> None:
        for _ in range(20):  # a provider retries a non-2xx
            status = post(ctx["port"], item[1])
            if 200 <= status < 300:
                acked[item[0]] = status
                return
            time.sleep(0.5)

    with ThreadPoolExecutor(4) as pool:
        started = time.monotonic()
        for n, item in enumerate(bodies):
            time.sleep(max(0.0, started + n / args.rate - time.monotonic()))
            pool.submit(send, item)
    killer.join()
    drained = _drain(timeout=90)
    cluster.stop()

    ids = [key for key, _ in bodies]
    events = WebhookEvent.objects.filter(event_key__in=ids)
    stored = dict(events.values_list("event_key").annotate(n=Count("pk")))
    processed = events.filter(status__in=["processed", "ignored"]).count()
    invoices = Invoice.objects.count()
    dup_transitions = (InvoiceTransition.objects.values("invoice", "to_state", "event_ref")
                       .annotate(n=Count("pk")).filter(n__gt=1).count())
    failed_transitions = InvoiceTransition.objects.filter(to_state="failed").count()
    dup_drafts = Draft.objects.values("invoice").annotate(n=Count("pk")).filter(n__gt=1).count()
    return {
        "deliveries": len(ids), "acknowledged_2xx": len(acked), "kills": killer.done,
        "tasks_held_at_each_kill": killer.held_at_kill,
        "stored": len(stored), "stored_twice": sum(1 for n in stored.values() if n > 1),
        "processed": processed, "tasks_re_presented": killer.re_presented,
        "invoices": invoices, "failure_transitions": failed_transitions,
        "duplicate_transitions": dup_transitions, "drafts": Draft.objects.count(),
        "duplicate_drafts": dup_drafts, "approval_requests": ApprovalRequest.objects.count(),
        "drained": drained,
        "lost": len(ids) - processed,
        "duplicates": sum(1 for n in stored.values() if n > 1) + dup_transitions + dup_drafts
        + max(0, invoices - len(ids)),
        "ok": drained and processed == len(ids) == invoices == failed_transitions
        and not dup_transitions and not dup_drafts and len(acked) == len(ids),
    }


def _outbox(path: Path) -> Counter[str]:
    if not path.exists():
        return Counter()
    return Counter(line.split(" ", 1)[0] for line in path.read_text().splitlines() if line.strip())


def _settle_in_process(*, future: Any) -> None:
    """The tick's work with the clock moved on: sweep dead claims, send due retries, copy
    fallback records; until a round changes nothing."""
    from approvals.claims import send_claims_sweep
    from approvals.models import EmailSend
    from approvals.sending import send_approved, send_fallback_reconcile, send_retry_due
    from paypilot.models import Tenant

    for _ in range(12):
        for tenant_id in Tenant.objects.values_list("pk", flat=True):
            send_claims_sweep(tenant_id=tenant_id, now=future)
            for approval_id in send_retry_due(tenant_id=tenant_id, now=future):
                send_approved(approval_id=approval_id, now=future)
        send_fallback_reconcile()
        if not EmailSend.objects.filter(status__in=["sending", "retrying"]).exists():
            return
        future += timedelta(minutes=31)  # past the longest backoff again


def drill_sends(ctx: dict[str, Any], args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from approvals.claims import send_mark_sent, send_resend
    from approvals.models import ApprovalRequest, EmailSend, SuppressedSend
    from approvals.services import approval_approve
    from paypilot.models import AuditEvent

    outbox: Path = ctx["outbox"]
    user = get_user_model().objects.create_superuser("drill", "drill@drill.example", uuid.uuid4().hex)
    chosen = list(ApprovalRequest.objects.filter(status="pending").order_by("pk")[: args.sends])
    for approval in chosen:
        approval_approve(approval=approval, user=user)  # queues its send task
    cluster: Proc = ctx["cluster"]
    cluster.start()
    killer = Killer(cluster, args.kills, rng, jitter=0.4)
    killer.start()
    killer.join()
    time.sleep(2.0)
    cluster.kill()  # the last kill: whatever was in flight stays in flight
    killed = killer.done + 1

    ids = [a.pk for a in chosen]
    sends = EmailSend.objects.filter(approval_id__in=ids)
    left_sending = sends.filter(status="sending").count()
    # The tasks the killed workers held come back (django-q2 re-presents them) and run on
    # real workers, undisturbed; then the clock moves past the claim timeout and the longest
    # retry backoff and the tick's work runs (dead claims swept, retries sent).
    _queue_fast_forward()
    cluster.start()
    _drain(timeout=90)
    cluster.stop()
    future = timezone.now() + timedelta(seconds=settings.PAYPILOT_SEND_CLAIM_TIMEOUT + 1, minutes=31)
    _settle_in_process(future=future)

    accepted = _outbox(outbox)
    by_status = Counter(sends.values_list("status", flat=True))
    sent_rows = {str(pk) for pk in sends.filter(status__in=EmailSend.TOUCH_STATUSES).values_list("pk", flat=True)}
    unknown = list(sends.filter(status="unknown"))
    figures: dict[str, Any] = {
        "approved": len(ids), "kills": killed, "tasks_held_at_each_kill": killer.held_at_kill,
        "sending_after_kills": left_sending,
        "statuses_after_sweep": dict(by_status),
        "provider_accepted_twice": sum(1 for n in accepted.values() if n > 1),
        "sent_rows_not_at_provider": sum(1 for pk in sent_rows if accepted[pk] == 0),
        "unknown": len(unknown), "unknown_that_went_out": sum(1 for s in unknown if accepted[str(s.pk)]),
        "stuck": by_status.get("sending", 0) + by_status.get("retrying", 0),
        "without_send_or_refusal": sum(
            1 for pk in ids if not EmailSend.objects.filter(approval_id=pk).exists()
            and not SuppressedSend.objects.filter(approval_id=pk).exists()
        ),
    }
    # A person settles each unknown from the provider's log: found -> mark sent, not found
    # -> resend. A resend can meet a lost answer again, so they look again until none is left.
    rounds = 0
    while unknown and rounds < 5:
        rounds += 1
        log = _outbox(outbox)
        for send in unknown:
            if log[str(send.pk)]:
                send_mark_sent(send=send, user=user)
            else:
                send_resend(send=send, user=user)  # queues a task; the settle sends it first
        future += timedelta(minutes=62)
        _settle_in_process(future=future)
        unknown = list(sends.filter(status="unknown"))
    figures["person_rounds"] = rounds
    # Last, the real workers run every task still queued: the ones killed workers held
    # (re-presented) and the resends' own tasks. Each must find its send done.
    cluster.start()
    _drain(timeout=60)
    cluster.stop()
    _settle_in_process(future=future + timedelta(minutes=62))
    final = _outbox(outbox)
    final_status = Counter(sends.values_list("status", flat=True))
    figures.update({
        "final_statuses": dict(final_status),
        "reached_provider_once": sum(1 for pk in sends.values_list("pk", flat=True) if final[str(pk)] == 1),
        "reached_provider_twice": sum(1 for n in final.values() if n > 1),
        "send_events": dict(Counter(
            f"{event.rsplit('.', 1)[1]}:{detail.get('reason', '')}".rstrip(":")
            for event, detail in AuditEvent.objects.filter(event__startswith="approvals.send.")
            .values_list("event", "detail")
        )),
    })
    # `failed` (retries used up, or a permanent refusal) is visible in the console: not lost.
    figures["failed_visibly"] = final_status.get("failed", 0)
    lost = (len(ids) - figures["reached_provider_once"] - figures["reached_provider_twice"]
            - figures["failed_visibly"])
    figures["lost"] = lost + figures["without_send_or_refusal"] + figures["sent_rows_not_at_provider"]
    figures["duplicates"] = figures["reached_provider_twice"] + figures["provider_accepted_twice"]
    figures["ok"] = (figures["lost"] == 0 and figures["duplicates"] == 0 and figures["stuck"] == 0
                     and final_status.get("unknown", 0) == 0)
    return figures


def drill_database(ctx: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    from django.db.models import Count

    from integrations.models import WebhookEvent

    port = ctx["port"]
    before = [delivery(10_000 + n) for n in range(10)]
    # SQLite: each delivery waits out busy_timeout (20 s) on the lock, 4 server threads at a
    # time, so a few are enough to see the answers.
    count = args.outage_deliveries if ctx["outage_method"].startswith("TCP") else 8
    during = [delivery(20_000 + n) for n in range(count)]
    after = [delivery(30_000 + n) for n in range(10)]
    ctx["cluster"].start()
    codes_before = [post(port, body) for _, body in before]
    # The outage hits a running cluster: wait until it has done the work before it.
    # (A qcluster *started* while the database is down exits at once, "failed to start":
    # its supervisor must restart it, see docs/deploy.md.)
    cluster_up_before = _drain(timeout=60)
    outage_started = time.monotonic()
    ctx["outage_start"]()
    with ThreadPoolExecutor(8) as pool:
        codes_during = list(pool.map(lambda item: post(port, item[1], timeout=60), during))
    time.sleep(max(0.0, args.outage_s - (time.monotonic() - outage_started)))
    ctx["outage_end"]()
    outage_s = time.monotonic() - outage_started
    # Providers retry what was not acknowledged; count how long until the first 2xx.
    back = time.monotonic()
    pending = [item for item, code in zip(during, codes_during, strict=True) if not 200 <= code < 300]
    first_2xx_after_s: float | None = None
    for _ in range(120):
        still = []
        for item in pending:
            code = post(port, item[1])
            if 200 <= code < 300:
                first_2xx_after_s = first_2xx_after_s or round(time.monotonic() - back, 2)
            else:
                still.append(item)
        pending = still
        if not pending:
            break
        time.sleep(0.5)
    codes_after = [post(port, body) for _, body in after]
    drained = _drain(timeout=60)
    worker_alive = ctx["cluster"].popen is not None and ctx["cluster"].popen.poll() is None
    ctx["cluster"].stop()

    all_ids = [key for key, _ in before + during + after]
    stored = dict(WebhookEvent.objects.filter(event_key__in=all_ids).values_list("event_key")
                  .annotate(n=Count("pk")))
    ok_during_not_stored = sum(
        1 for (key, _), code in zip(during, codes_during, strict=True)
        if 200 <= code < 300 and key not in stored
    )
    processed = WebhookEvent.objects.filter(event_key__in=all_ids, status__in=["processed", "ignored"]).count()
    return {
        "method": ctx["outage_method"], "outage_s": round(outage_s, 1),
        "codes_before": dict(Counter(codes_before)), "codes_during_outage": dict(Counter(codes_during)),
        "codes_after": dict(Counter(codes_after)),
        "first_2xx_after_recovery_s": first_2xx_after_s if len(pending) == 0 else None,
        "never_accepted": len(pending), "2xx_during_outage_not_stored": ok_during_not_stored,
        "stored": len(stored), "stored_twice": sum(1 for n in stored.values() if n > 1),
        "processed": processed, "drained_before": cluster_up_before, "drained": drained,
        "worker_alive_after": worker_alive,
        "lost": len(all_ids) - processed, "duplicates": sum(1 for n in stored.values() if n > 1),
        # A 2xx during the outage is fine only when it was stored (SQLite's lock may end
        # while a delivery waits on it); a 2xx with nothing stored is the one real loss.
        "ok": (ok_during_not_stored == 0 and not pending and processed == len(all_ids) and drained
               and worker_alive and all(200 <= c < 300 for c in codes_before + codes_after)),
    }


def child(db: str, args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"pp-fault-drill-{db}."))
    env = dict(os.environ)
    # A database of this run's own (dropped at the end), so two runs never share one.
    pg_url = os.environ.get("FAULT_DRILL_PG_URL", "postgres://postgres@127.0.0.1:5432/pp_fault_drill")
    pg_url = f"{pg_url}_{os.getpid()}"
    proxy: TcpProxy | None = None
    if db == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{work}/drill.sqlite3"
        app_url = env["DATABASE_URL"]
    else:
        import psycopg

        admin, name = pg_url.rsplit("/", 1)
        with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        env["DATABASE_URL"] = pg_url
        proxy = TcpProxy(free_port(), int(pg_url.rsplit(":", 1)[1].split("/")[0]))
        host_port = pg_url.split("@", 1)[1].split("/", 1)[0]
        app_url = pg_url.replace(host_port, f"127.0.0.1:{proxy.listen}")
    env.update({
        "DJANGO_SETTINGS_MODULE": "paypilot.settings", "DJANGO_DEBUG": "0",
        "PAYPILOT_LOG_LEVEL": "WARNING", "PAYPILOT_Q_SYNC": "0", "PAYPILOT_Q_WORKERS": "2",
        "PAYPILOT_Q_TIMEOUT": "20", "PAYPILOT_SEND_CLAIM_TIMEOUT": "25",
        "PAYPILOT_RATE_LIMIT_PER_IP": "0", "PAYPILOT_RATE_LIMIT_PER_TOKEN": "0",
        "PAYPILOT_HOLDOUT_PCT": "0", "PAYPILOT_LLM_DRAFT": "0", "OPENAI_API_KEY": "",
        "PAYPILOT_SEND_EMAIL": "1", "PAYPILOT_ALLOWED_RECIPIENTS": "*",
        "PAYPILOT_SEND_FALLBACK_DIR": str(work / "send-fallback"),
        "EMAIL_BACKEND": "fault_drill_mail.DrillBackend", "DRILL_OUTBOX": str(work / "provider-log.txt"),
        "DRILL_MAIL_DELAY_MS": "30,150", "DRILL_MAIL_TRANSIENT": "0.1", "DRILL_MAIL_LOST_ANSWER": "0.05",
        "DRILL_SEED": str(args.seed), "DRILL_STRIPE_SECRET": SECRET,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "scripts"), str(ROOT)]),
    })
    os.environ.update(env)
    sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
    import django

    django.setup()
    from django.core.management import call_command

    from paypilot.services import tenant_create

    call_command("migrate", verbosity=0)
    tenant_create(slug="drill", name="Drill Ltd")
    call_command("webhook_credential", tenant="drill", provider="stripe", secret_env="DRILL_STRIPE_SECRET",
                 stdout=open(os.devnull, "w"))
    app_env = {**env, "DATABASE_URL": app_url}
    if proxy is not None:
        proxy.start()
    server = Proc([str(Path(PY).parent / "granian"), "--interface", "wsgi", "--host", "127.0.0.1",
                   "--port", str(args.port), "--workers", "1", "--blocking-threads", "4", "--no-ws",
                   "--log-level", "warning", "paypilot.wsgi:application"], app_env, work / "server.log")
    cluster = Proc([PY, "manage.py", "qcluster"], app_env, work / "qcluster.log")
    ctx: dict[str, Any] = {"port": args.port, "cluster": cluster, "outbox": work / "provider-log.txt"}
    locker: dict[str, Any] = {}
    if proxy is not None:
        ctx.update(outage_method="TCP proxy to PostgreSQL stopped (connections cut, port closed)",
                   outage_start=proxy.stop, outage_end=proxy.start)
    else:
        import sqlite3

        # Running as root, a read-only file is still writable, so the outage is another
        # process holding the write lock past the app's busy_timeout (20 s): writes fail.
        def unlock() -> None:
            if "conn" in locker:
                locker.pop("conn").rollback()

        def lock() -> None:
            conn = sqlite3.connect(f"{work}/drill.sqlite3", timeout=30, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("BEGIN EXCLUSIVE")
            locker["conn"] = conn
            locker["timer"] = threading.Timer(args.sqlite_lock_s, unlock)
            locker["timer"].start()

        def lock_end() -> None:
            locker["timer"].join()

        ctx.update(outage_method=f"SQLite write lock held by another process ({args.sqlite_lock_s:.0f} s)",
                   outage_start=lock, outage_end=lock_end)
    rng = random.Random(f"{args.seed}-{db}")
    server.start()
    results: dict[str, Any] = {"db": db}
    started = time.monotonic()
    try:
        wait_http(args.port, server)
        for name, drill in (("worker_kill", lambda: drill_worker(ctx, args, rng)),
                            ("sends_kill_and_backend_failures", lambda: drill_sends(ctx, args, rng)),
                            ("database_outage", lambda: drill_database(ctx, args))):
            began = time.monotonic()
            results[name] = drill()
            results[name]["seconds"] = round(time.monotonic() - began, 1)
    finally:
        cluster.kill()
        server.stop()
        if proxy is not None:
            proxy.stop()
        if "conn" in locker:
            locker.pop("conn").close()
        if db == "postgres":
            from django.db import connections

            connections.close_all()
            import psycopg

            admin, name = pg_url.rsplit("/", 1)
            with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    results["seconds"] = round(time.monotonic() - started, 1)
    results["ok"] = all(v["ok"] for v in results.values() if isinstance(v, dict))
    if results["ok"]:
        shutil.rmtree(work, ignore_errors=True)
    else:
        results["logs"] = str(work)  # server.log, qcluster.log, provider-log.txt, the database
    print("RESULT " + json.dumps(results, default=str))


def summary(result: dict[str, Any]) -> str:
    w, s, d = result["worker_kill"], result["sends_kill_and_backend_failures"], result["database_outage"]
    return "\n".join([
        f"== {result['db']}: {'OK' if result['ok'] else 'FAILED'} ({result['seconds']} s: worker"
        f" {w['seconds']} s, sends {s['seconds']} s, database {d['seconds']} s)",
        f"worker SIGKILL: {w['kills']} kills survived (tasks in flight at each:"
        f" {w['tasks_held_at_each_kill']}); {w['deliveries']} deliveries, {w['stored']} stored,"
        f" {w['processed']} processed ({w['tasks_re_presented']} tasks re-run after a kill); lost {w['lost']},"
        f" duplicates {w['duplicates']}",
        f"sends: {s['approved']} approved, {s['kills']} kills (tasks in flight at each:"
        f" {s['tasks_held_at_each_kill']}); backend events {s['send_events']};"
        f" {s['sending_after_kills']} left `sending`"
        f" by the kills; after the sweep stuck {s['stuck']}, delivery unknown {s['unknown']}"
        f" ({s['unknown_that_went_out']} had gone out); reached the provider twice"
        f" {s['reached_provider_twice']}; after a person settled the unknowns {s['reached_provider_once']}"
        f"/{s['approved']} reached it once; lost {s['lost']}, duplicates {s['duplicates']}",
        f"database outage ({d['method']}): {sum(d['codes_during_outage'].values())} deliveries during"
        f" {d['outage_s']} s got {d['codes_during_outage']}; 2xx without storage"
        f" {d['2xx_during_outage_not_stored']}; first 2xx {d['first_2xx_after_recovery_s']} s after it"
        f" returned (no restart); worker alive and drained after it: {d['worker_alive_after']}"
        f" / {d['drained']}; lost {d['lost']}, duplicates {d['duplicates']}",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--events", type=int, default=200, help="deliveries in the worker drill")
    parser.add_argument("--rate", type=float, default=50.0, help="deliveries per second")
    parser.add_argument("--sends", type=int, default=60, help="approvals sent in the send drill")
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs per drill")
    parser.add_argument("--outage-deliveries", type=int, default=30, help="PostgreSQL outage")
    parser.add_argument("--outage-s", type=float, default=5.0, help="PostgreSQL outage length")
    parser.add_argument("--sqlite-lock-s", type=float, default=22.0, help="> busy_timeout (20 s)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--port", type=int, default=8105,
                        help="server port (with --db both, PostgreSQL's server and proxy take free ports)")
    parser.add_argument("--child", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args)
        return
    print(f"fault drill, seed {args.seed} (re-run with --seed {args.seed})", flush=True)
    failed = False
    # Both databases at once: the drills mostly wait (busy timeouts, restarts, delays), so
    # running them side by side halves the wall time; the second server takes a free port.
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    runs = {}
    for k, db in enumerate(dbs):
        port = args.port if k == 0 else free_port()
        runs[db] = subprocess.Popen([PY, __file__, *sys.argv[1:], "--child", db, "--port", str(port),
                                     "--seed", str(args.seed)],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for db, popen in runs.items():
        out, err = popen.communicate()
        run = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
        if run.returncode != 0 or not lines:
            print(f"== {db}: the drill itself failed (exit {run.returncode})\n{run.stdout[-3000:]}"
                  f"\n{run.stderr[-3000:]}")
            failed = True
            continue
        result = json.loads(lines[-1][len("RESULT "):])
        print(summary(result))
        print(lines[-1], flush=True)
        failed = failed or not result["ok"]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
