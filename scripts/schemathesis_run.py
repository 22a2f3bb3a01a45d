"""Schemathesis over /api/schema/ with many examples, in process (WSGI), on a throwaway
database: the deeper run of paypilot/tests/test_schemathesis.py, meant as a CI step.

Usage: `.venv/bin/python scripts/schemathesis_run.py [--examples 100]`
A fresh SQLite file in a temporary directory unless DATABASE_URL is set (then that
database is migrated and used: give it a throwaway one). Prints one JSON line
(operations, calls, failures of any registered check: server errors, conformance, positive
and negative data); exit status 1 if any was found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=100, help="cases per operation and generation mode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pp_schemathesis_") as tmp:
        os.environ.setdefault("DATABASE_URL", f"sqlite:///{Path(tmp) / 'db.sqlite3'}")
        os.environ["DJANGO_SETTINGS_MODULE"] = "paypilot.settings"
        os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"  # no access line per generated request
        # Hundreds of requests come from one address and one token.
        os.environ["PAYPILOT_RATE_LIMIT_PER_IP"] = "0"
        os.environ["PAYPILOT_RATE_LIMIT_PER_TOKEN"] = "0"
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        from paypilot.tests.test_schemathesis import demo_headers, run_schemathesis

        call_command("migrate", verbosity=0, interactive=False)
        figures = run_schemathesis(headers=demo_headers(), examples=args.examples)
    print(json.dumps({"examples_per_mode": args.examples, "operations": figures["operations"],
                      "calls": figures["calls"], "server_errors": len(figures["server_errors"]),
                      "first_errors": figures["server_errors"][:40]}))
    return 1 if figures["server_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
