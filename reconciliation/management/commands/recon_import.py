"""`recon_import --tenant T --kind K FILE`: import one export, all or nothing; JSON out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconciliation.formats import FileRefused
from reconciliation.management.commands._common import ACTOR, progress_bar, refused, tenant_get
from reconciliation.models import Kind
from reconciliation.services.imports import file_import


class Command(BaseCommand):
    help = "Import a provider report, shop orders, a bank statement or a disputes list (stored once per file)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--kind", required=True, choices=Kind.values)
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_get(options["tenant"])
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(json.dumps({"error": "file_not_found", "message": f"no file {options['file']}"}))
        # From the path: the import hashes the file in a stream and reads a large CSV slice
        # by slice, so the command never holds the whole file.
        with progress_bar(_lines(path) or None, "import") as bar:
            try:
                batch = file_import(tenant=tenant, kind=options["kind"], filename=path.name, path=path, actor=ACTOR,
                                    progress=bar.update)
            except FileRefused as exc:
                raise refused(exc) from exc
        self.stdout.write(json.dumps({"batch": batch.pk, "kind": batch.kind, "format": batch.file_format,
                                      "rows": batch.rows, "sha256": batch.sha256}))


def _lines(path: Path) -> int:
    """The file's line count for the progress bar, read in 1 MiB pieces (0 above the import
    limit, which the import then refuses)."""
    if path.stat().st_size > settings.PAYPILOT_RECON_MAX_FILE_BYTES:
        return 0
    count = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            count += chunk.count(b"\n")
    return count
