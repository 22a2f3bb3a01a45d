"""`recon_import --tenant T --kind K FILE`: import one export, all or nothing; JSON out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from reconciliation.formats import FileRefused
from reconciliation.management.commands._common import ACTOR, progress_bar, read_file, refused, tenant_get
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
        data = read_file(options["file"], limit=settings.PAYPILOT_RECON_MAX_FILE_BYTES)
        with progress_bar(data.count(b"\n") or None, "import") as bar:
            try:
                batch = file_import(tenant=tenant, kind=options["kind"], filename=Path(options["file"]).name,
                                    data=data, actor=ACTOR, progress=bar.update)
            except FileRefused as exc:
                raise refused(exc) from exc
        self.stdout.write(json.dumps({"batch": batch.pk, "kind": batch.kind, "format": batch.file_format,
                                      "rows": batch.rows, "sha256": batch.sha256}))
