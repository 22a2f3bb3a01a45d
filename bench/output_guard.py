"""Microseconds per `dunning.guards.guard_check` call on typical dunning copy, text only and
with an HTML part (the send gates run it up to four times per send; model drafting once).

No database. Prints the median of `--repeat` runs of `--n` calls each.

Usage: .venv/bin/python bench/output_guard.py [--n 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = "http://127.0.0.1:8000/r/eyJpIjo0Mn0:1tXyZa:AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
BODY = ("Hi Ada,\n\nWe tried to charge 49.00 USD for your Acme Pro plan on 2026-07-01 and the card "
        "was declined because it has expired. Please update your card using the secure link below; "
        f"we will retry in 3 days.\n\nThanks,\nAcme billing\n\nUpdate your card:\n{LINK}\n")
HTML = (f'<p>Hi Ada,</p><p>We tried to charge <b>49.00 USD</b> for your Acme Pro plan and the card '
        f'was declined.</p><p><a href="{LINK}" style="color:#0a58ca">Update your card</a></p>'
        "<p>Thanks,<br>Acme billing</p>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    import django

    django.setup()
    from dunning.guards import guard_check

    for label, kwargs in (("text", {}), ("text+html", {"html_body": HTML}), ("text, minted", {"minted": LINK})):
        assert guard_check(subject="Your payment did not go through", body=BODY, **kwargs).ok
        runs = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for _ in range(args.n):
                guard_check(subject="Your payment did not go through", body=BODY, **kwargs)
            runs.append((time.perf_counter() - started) / args.n * 1e6)
        median = statistics.median(runs)
        print(f"guard_check {label:<13} {median:7.1f} us per call (median of {args.repeat} x {args.n})")


if __name__ == "__main__":
    main()
