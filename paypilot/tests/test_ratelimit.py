"""paypilot.ratelimit: counters shared across processes, windows, and the client address
behind trusted proxies."""

from __future__ import annotations

import multiprocessing
import socket
from types import SimpleNamespace

import pytest
from django.test import override_settings

from paypilot.ratelimit import (
    client_address,
    counter_hit,
    counter_peek,
    counter_reset,
    counters_clear,
)


@pytest.fixture(autouse=True)
def _fresh_counters():
    counters_clear()
    yield
    counters_clear()


def _request(remote: str, forwarded: str = "") -> SimpleNamespace:
    meta = {"REMOTE_ADDR": remote}
    if forwarded:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return SimpleNamespace(META=meta)


# --- the client address -------------------------------------------------------------------

@override_settings(PAYPILOT_TRUSTED_PROXIES=[])
def test_forwarded_header_is_ignored_without_trusted_proxies():
    assert client_address(_request("203.0.113.5", "198.51.100.7")) == "203.0.113.5"


@override_settings(PAYPILOT_TRUSTED_PROXIES=["10.0.0.0/8"])
def test_forwarded_header_is_ignored_from_an_untrusted_peer():
    assert client_address(_request("203.0.113.5", "198.51.100.7")) == "203.0.113.5"


@override_settings(PAYPILOT_TRUSTED_PROXIES=["10.0.0.0/8", "127.0.0.1/32"])
@pytest.mark.parametrize(
    ("remote", "forwarded", "client"),
    [
        ("10.1.2.3", "198.51.100.7", "198.51.100.7"),
        # The client wrote the left-most entry itself: the proxy's own append wins.
        ("10.1.2.3", "1.2.3.4, 198.51.100.7", "198.51.100.7"),
        ("127.0.0.1", "198.51.100.7, 10.9.9.9", "198.51.100.7"),  # two proxies in a row
        ("10.1.2.3", "10.2.2.2, 10.3.3.3", "10.2.2.2"),  # all trusted: the first hop
        ("10.1.2.3", "", "10.1.2.3"),  # no header
        ("10.1.2.3", "198.51.100.7, not-an-ip", "10.1.2.3"),  # garbled: the proxy itself
        ("10.1.2.3", "2001:db8::1", "2001:db8::1"),
    ],
)
def test_forwarded_address_from_a_trusted_proxy(remote, forwarded, client):
    assert client_address(_request(remote, forwarded)) == client


@override_settings(PAYPILOT_TRUSTED_PROXIES=["10.0.0.0/8"], PAYPILOT_RATE_LIMIT_PER_IP=2,
                   PAYPILOT_RATE_LIMIT_PER_TOKEN=0)
def test_clients_behind_one_trusted_proxy_are_limited_separately(client, db):
    def get(forwarded: str) -> int:
        return client.get("/tokens", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded).status_code

    assert [get("198.51.100.1") for _ in range(3)] == [401, 401, 429]
    assert get("198.51.100.2") == 401  # another client through the same proxy is not throttled
    # A client cannot pick a fresh key by writing its own header in front of the proxy's.
    assert get("9.9.9.9, 198.51.100.1") == 429


def test_a_bad_trusted_proxy_entry_stops_start_up():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={"DJANGO_SETTINGS_MODULE": "paypilot.settings", "PAYPILOT_TRUSTED_PROXIES": "10.0.0.0/8,nonsense",
             "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False,
    )
    assert result.returncode != 0 and "PAYPILOT_TRUSTED_PROXIES" in result.stderr


# --- counters -----------------------------------------------------------------------------

def test_counts_reset_with_each_window():
    assert counter_hit("k", window=60, now=120.0).count == 1
    assert counter_hit("k", window=60, now=150.0).count == 2
    hit = counter_hit("k", window=60, now=181.0)  # next window
    assert (hit.count, hit.retry_after) == (1, 59)
    assert counter_peek("k", window=60, now=182.0).count == 1
    counter_reset("k", window=60, now=183.0)
    assert counter_peek("k", window=60, now=184.0).count == 0


def test_old_windows_are_removed(settings):
    from pathlib import Path

    for bucket in range(5):
        counter_hit("k", window=10, now=bucket * 10.0)
    windows = sorted(path.name for path in Path(settings.PAYPILOT_RATE_LIMIT_DIR).iterdir())
    assert windows == ["10-3", "10-4"]


def _hammer(args: tuple[str, int]) -> int:
    key, times = args
    return max(counter_hit(key, window=3600).count for _ in range(times))


def test_processes_share_one_count_and_lose_no_hit():
    """Four worker processes hitting one key at once: the count is exact (web processes
    under gunicorn or granian are separate processes like these)."""
    with multiprocessing.get_context("fork").Pool(4) as pool:
        highest = pool.map(_hammer, [("shared", 250)] * 4)
    assert counter_peek("shared", window=3600).count == 1000
    assert max(highest) == 1000


def _redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.2).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _redis_up(), reason="no Redis on 127.0.0.1:6379")
def test_redis_counters_when_redis_url_is_set():
    caches = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": "redis://127.0.0.1:6379/0", "KEY_PREFIX": "pp-test-ratelimit"}}
    with override_settings(REDIS_URL="redis://127.0.0.1:6379/0", CACHES=caches):
        counters_clear()
        assert [counter_hit("r", window=60, now=60.5).count for _ in range(3)] == [1, 2, 3]
        assert counter_peek("r", window=60, now=61.0).count == 3
        counter_reset("r", window=60, now=61.0)
        assert counter_peek("r", window=60, now=61.0).count == 0
        counters_clear()


@pytest.mark.parametrize(
    ("address", "key"),
    [("203.0.113.5", "203.0.113.5"), ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
     ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"), ("", "")],
)
def test_ipv6_clients_are_keyed_by_their_64(address, key):
    from paypilot.ratelimit import client_key

    assert client_key(address) == key


def test_a_broken_store_fails_open_and_says_so(settings, tmp_path, caplog, client, db):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings.PAYPILOT_RATE_LIMIT_DIR = blocker / "counters"
    settings.PAYPILOT_RATE_LIMIT_PER_IP = 1
    assert [counter_hit("k", window=60).count for _ in range(3)] == [1, 1, 1]
    assert "rate-limit counter store failed" in caplog.text
    assert [client.get("/tokens").status_code for _ in range(3)] == [401, 401, 401]  # served, not 500
