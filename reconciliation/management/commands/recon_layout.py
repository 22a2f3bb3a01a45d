"""`recon_layout suggest --kind K FILE` prints a suggested layout; `recon_layout save` confirms one."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconciliation.formats import FileRefused, decode
from reconciliation.layout_model import layout_suggest_assisted
from reconciliation.management.commands._common import ACTOR, read_file, refused, tenant_get
from reconciliation.models import Kind
from reconciliation.services.imports import layout_save

SUGGEST_KEYS = ("kind", "columns", "date_format", "decimal_separator", "delimiter", "confidence", "preview",
                "sources", "model")


class Command(BaseCommand):
    help = ("Suggest (deterministic; a chat model's checked additions only when PAYPILOT_RECON_LAYOUT_LLM is on) "
            "or confirm the column layout of a CSV export.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        suggest = sub.add_parser("suggest", help="print JSON: kind, columns, date_format, ... preview")
        suggest.add_argument("--kind", required=True, choices=Kind.values)
        suggest.add_argument("--tenant", help="meter a model call against this tenant's spend cap (optional)")
        suggest.add_argument("file")
        save = sub.add_parser("save", help="confirm a mapping for the header of --sample")
        save.add_argument("--tenant", required=True)
        save.add_argument("--kind", required=True, choices=Kind.values)
        save.add_argument("--mapping", required=True, help="JSON file: columns, date_format, decimal_separator, "
                                                           "delimiter (optional)")
        save.add_argument("--sample", required=True, help="an export in this layout; every row must convert")

    def handle(self, *args: Any, **options: Any) -> None:
        limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
        if options["action"] == "suggest":
            tenant = tenant_get(options["tenant"]) if options["tenant"] else None
            try:
                suggestion = layout_suggest_assisted(kind=options["kind"], tenant=tenant,
                                                     text=decode(read_file(options["file"], limit=limit)))
            except FileRefused as exc:
                raise refused(exc) from exc
            for note in suggestion["notes"]:
                sys.stderr.write(f"note: {note}\n")
            self.stdout.write(json.dumps({k: suggestion[k] for k in SUGGEST_KEYS}, indent=2, ensure_ascii=False))
            return
        tenant = tenant_get(options["tenant"])
        try:
            mapping = json.loads(read_file(options["mapping"]).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CommandError(json.dumps({"error": "refused", "reason": "bad_mapping",
                                           "message": "the mapping file is not JSON"})) from exc
        if not isinstance(mapping, dict):
            raise CommandError(json.dumps({"error": "refused", "reason": "bad_mapping",
                                           "message": "the mapping must be a JSON object"}))
        try:
            layout, preview = layout_save(tenant=tenant, kind=options["kind"], mapping=mapping,
                                          sample=read_file(options["sample"], limit=limit), actor=ACTOR)
        except FileRefused as exc:
            raise refused(exc) from exc
        self.stdout.write(json.dumps({"layout": layout.pk, "kind": layout.kind, "header_key": layout.header_key,
                                      "preview": preview}, indent=2, ensure_ascii=False))
