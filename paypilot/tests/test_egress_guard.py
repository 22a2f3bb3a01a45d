"""The test suite's egress guard (root conftest.py) refuses every outbound connection but
loopback, names the caller's file:line, and fails the test even when the error is swallowed."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import EgressBlocked

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(THIS.read_text().splitlines(), 1) if text in line)


def test_a_direct_connection_is_refused_with_this_line(egress_violations):  # type: ignore[no-untyped-def]
    with pytest.raises(EgressBlocked) as refused:
        socket.create_connection(("192.0.2.10", 443), timeout=1)  # TEST-NET-1: never routable
    where = f"{THIS}:{_line_of('TEST-NET-1: never routable')}"
    assert where in str(refused.value)
    assert "stripe_api" in str(refused.value)  # the message names the seams
    assert len(egress_violations) == 1
    egress_violations.clear()


@pytest.mark.parametrize("call", [
    lambda: socket.getaddrinfo("api.openai.com", 443),
    lambda: urllib.request.urlopen("http://example.com/", timeout=1),  # noqa: S310
    lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).connect_ex(("2001:db8::1", 443, 0, 0)),
    lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("198.51.100.53", 53)),
])
def test_every_way_out_is_refused(egress_violations, call):  # type: ignore[no-untyped-def]
    with pytest.raises(EgressBlocked):
        call()
    assert str(THIS) in egress_violations[0]
    egress_violations.clear()


def test_loopback_and_unix_sockets_are_allowed() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        accepted.append(conn.recv(5))
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(("localhost", port), timeout=5) as client:
        client.sendall(b"hello")
    thread.join(5)
    server.close()
    assert accepted == [b"hello"]
    left, right = socket.socketpair()  # AF_UNIX
    left.sendall(b"ok")
    assert right.recv(2) == b"ok"
    left.close()
    right.close()


def test_a_swallowed_refusal_still_fails_the_test() -> None:
    # Inside the repository (var/ is ignored by git), so the root conftest applies to it.
    probe_dir = ROOT / "var" / f"egress_probe_{uuid.uuid4().hex}"
    probe_dir.mkdir(parents=True)
    probe = probe_dir / "test_probe.py"
    probe.write_text(textwrap.dedent("""
        import urllib.request

        def test_calls_out_and_hides_it():
            try:
                urllib.request.urlopen("https://hooks.example.net/ping", timeout=1)
            except Exception:
                pass  # a careless "best effort" call
    """))
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", str(probe), "-q", "-p", "no:cacheprovider"],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(probe_dir)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "egress guard" in out and f"{probe}:6" in out, out
