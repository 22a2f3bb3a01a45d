"""Fixed-window counters shared by every web process, and the client address behind proxies.

Rate limits and the admin login lockout count here. With `REDIS_URL` the counters are
Redis keys (`INCR` is atomic across machines). Without it they are files under
`PAYPILOT_RATE_LIMIT_DIR`, one per key and window, grown by one byte per hit with
`O_APPEND`: the kernel makes each append atomic, so every process on the machine sees one
count and none is lost, at the cost of one small write (about 10-20 us). Django's own
caches were the other candidates and do not fit: locmem counts per process, the file
cache's `incr` is a read then a rewrite (concurrent hits are lost) and it lists its whole
directory on every write, and the database cache would make a refused flood touch the
database, which is what a limit must avoid.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger("paypilot.ratelimit")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Hit:
    count: int  # hits in this window, this one included
    retry_after: int  # seconds until the window ends


def _bucket(window: int, now: float) -> tuple[int, int]:
    bucket = int(now // window)
    return bucket, max(1, int((bucket + 1) * window - now))


def counter_hit(key: str, *, window: int, now: float | None = None) -> Hit:
    """Count one hit of `key` in the current `window`-second window.

    Fails open: when the store cannot be written (Redis down, the directory full) the hit
    counts as the first, and the error is logged, so a broken counter store never takes
    the service down with it."""
    now = time.time() if now is None else now
    bucket, retry_after = _bucket(window, now)
    try:
        if settings.REDIS_URL:
            return Hit(_redis_hit(f"rl:{key}:{window}:{bucket}", window), retry_after)
        return Hit(_file_hit(_file(key, window, bucket), window, bucket), retry_after)
    except Exception as exc:  # noqa: BLE001 - any store failure: count nothing, say so
        logger.error("rate-limit counter store failed (%s); not limiting", type(exc).__name__)
        return Hit(1, retry_after)


def _redis_hit(name: str, window: int) -> int:
    if cache.add(name, 1, timeout=window + 1):
        return 1
    try:
        return int(cache.incr(name))
    except ValueError:  # expired between add and incr
        cache.add(name, 1, timeout=window + 1)
        return 1


def _file_hit(path: Path, window: int, bucket: int) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:  # first hit of a new window: make its directory, drop old ones
        _new_window(path.parent, window, bucket)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, b".")
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def counter_peek(key: str, *, window: int, now: float | None = None) -> Hit:
    """The count of `key` in the current window, without counting a hit."""
    now = time.time() if now is None else now
    bucket, retry_after = _bucket(window, now)
    if settings.REDIS_URL:
        return Hit(int(cache.get(f"rl:{key}:{window}:{bucket}") or 0), retry_after)
    try:
        return Hit(_file(key, window, bucket).stat().st_size, retry_after)
    except FileNotFoundError:
        return Hit(0, retry_after)


def counter_reset(key: str, *, window: int, now: float | None = None) -> None:
    """Forget `key`'s count in the current window (a successful login clears its failures)."""
    now = time.time() if now is None else now
    bucket, _ = _bucket(window, now)
    if settings.REDIS_URL:
        cache.delete(f"rl:{key}:{window}:{bucket}")
        return
    _file(key, window, bucket).unlink(missing_ok=True)


def counters_clear() -> None:
    """Drop every counter (tests, and an operator lifting every limit at once)."""
    if settings.REDIS_URL:
        # Only our keys: the same Redis may hold other data (cache.clear() would FLUSHDB).
        client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
        for name in client.scan_iter(match="*:rl:*"):
            client.delete(name)
        return
    shutil.rmtree(_root(), ignore_errors=True)


def _root() -> Path:
    return Path(settings.PAYPILOT_RATE_LIMIT_DIR)


def _file(key: str, window: int, bucket: int) -> Path:
    # Hashed: keys carry client addresses and user names, which stay out of file names.
    digest = hashlib.sha256(key.encode()).hexdigest()[:40]
    return _root() / f"{window}-{bucket}" / digest


def _new_window(directory: Path, window: int, bucket: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.parent.iterdir():
        size, _, number = old.name.partition("-")
        if size == str(window) and number.isdigit() and int(number) < bucket - 1:
            shutil.rmtree(old, ignore_errors=True)


# --- the client address -------------------------------------------------------------------

@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def trusted_proxy_networks(entries: Sequence[str]) -> tuple[Network, ...]:
    """Parse PAYPILOT_TRUSTED_PROXIES; raises ValueError on an entry that is no network."""
    return _networks(tuple(entries))


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_prefix(remote_addr: str | None) -> str:
    """The client's /24 (IPv4) or /48 (IPv6) network: enough to spot abuse, not a person."""
    try:
        ip = ipaddress.ip_address(remote_addr or "")
    except ValueError:
        return "unknown"
    bits = 24 if ip.version == 4 else 48
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


def client_address(request: Any) -> str:
    """The address a request came from: REMOTE_ADDR, unless that is a trusted proxy
    (PAYPILOT_TRUSTED_PROXIES); then the right-most X-Forwarded-For entry that is not a
    trusted proxy. Entries left of it were written by the client and are never believed,
    so nobody picks their own rate-limit key by sending the header."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    networks = _networks(tuple(settings.PAYPILOT_TRUSTED_PROXIES))
    if not networks or not _trusted(remote, networks):
        return remote
    hops = [hop.strip() for hop in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return remote  # a garbled chain: fall back to the proxy itself (fails safe)
        if not _trusted(hop, networks):
            return hop
    return hops[0] if hops else remote


def client_key(address: str) -> str:
    """The rate-limit key of a client address: the address itself for IPv4, its /64 for
    IPv6 (one subscriber usually holds a whole /64, so per-address keys would give them
    2**64 fresh allowances)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
