"""/health and /metrics see the django-q2 workers: ok, stale (a due task waits), none (killed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from django_q.models import OrmQ

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stats_dir(tmp_path, settings):
    directory = tmp_path / "worker-stats"
    settings.CACHES = {**settings.CACHES, "workers": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(directory)}}
    return directory


@pytest.fixture
def cluster(tmp_path, stats_dir):
    """A real `manage.py qcluster` on its own SQLite file, sharing the heartbeat directory."""
    env = {key: value for key, value in os.environ.items() if key not in {"PAYPILOT_TESTING", "REDIS_URL"}}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'cluster.sqlite3'}", PAYPILOT_WORKER_STATS_DIR=str(stats_dir),
               PAYPILOT_Q_WORKERS="1", DJANGO_SETTINGS_MODULE="paypilot.settings")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    process = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    yield process
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


def _workers_until(client, wanted: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get("/health").json()
        if body["workers"] == wanted or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


@pytest.mark.django_db
def test_no_cluster_means_workers_none_and_503_only_when_required(client, settings, stats_dir):
    assert client.get("/health").json()["workers"] == "none"
    assert client.get("/health").status_code == 200
    settings.PAYPILOT_HEALTH_REQUIRE_WORKERS = True
    response = client.get("/health")
    assert response.status_code == 503
    assert response.json()["status"] == "degraded"


# real_clock: the cluster's heartbeats carry its own (real) clock, which the shift cannot move.
@pytest.mark.real_clock
@pytest.mark.django_db(transaction=True)
def test_a_running_cluster_is_ok_a_waiting_task_is_stale_and_a_killed_one_is_none(client, settings, cluster):
    settings.PAYPILOT_HEALTH_REQUIRE_WORKERS = True
    assert _workers_until(client, "ok", timeout=60)["workers"] == "ok"
    assert client.get("/health").status_code == 200

    # A due task nobody has taken for two minutes (this cluster works another database).
    settings.PAYPILOT_WORKERS_STALE_SECONDS = 60
    OrmQ.objects.create(key="paypilot", payload="x", lock=timezone.now() - timedelta(seconds=120))
    response = client.get("/health")
    assert (response.status_code, response.json()["workers"]) == (503, "stale")
    OrmQ.objects.all().delete()

    os.killpg(cluster.pid, signal.SIGKILL)
    started = time.monotonic()
    assert _workers_until(client, "none", timeout=60)["workers"] == "none"
    assert time.monotonic() - started < 60
    assert client.get("/health").status_code == 503


@pytest.mark.django_db
def test_metrics_export_the_workers_state(api_client_for, tenant, stats_dir):
    OrmQ.objects.create(key="paypilot", payload="x", lock=timezone.now() - timedelta(seconds=30))
    text = api_client_for(tenant, "platform_admin").get("/metrics").content.decode()
    assert 'paypilot_workers_state{state="none"} 1.0' in text
    assert "paypilot_worker_clusters 0.0" in text
    oldest = [line for line in text.splitlines() if line.startswith("paypilot_queue_oldest_due_seconds ")]
    assert oldest and float(oldest[0].split()[1]) >= 30
