"""Shared bits of the reconciliation commands: tenant lookup and JSON refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from paypilot.models import Tenant
from reconciliation.formats import FileRefused

ACTOR = "command"


def tenant_get(slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(json.dumps({"error": "unknown_tenant", "message": f"no tenant {slug!r}"}))
    return tenant


def read_file(path: str, *, limit: int | None = None) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise CommandError(json.dumps({"error": "file_not_found", "message": f"no file {path}"}))
    if limit is not None and file.stat().st_size > limit:
        raise refused(FileRefused("file_too_large", f"the file has {file.stat().st_size} bytes; the limit is {limit}"))
    return file.read_bytes()


def refused(exc: FileRefused | Any) -> CommandError:
    """A refusal as one JSON line on stderr and a non-zero exit status."""
    body = exc.as_dict() if isinstance(exc, FileRefused) else {"reason": getattr(exc, "reason", "refused"),
                                                               "message": str(exc)}
    return CommandError(json.dumps({"error": "refused", **body}, ensure_ascii=False))


def progress_bar(total: int | None, label: str) -> Any:
    """tqdm on stderr; silent when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="rows", file=sys.stderr, disable=None, leave=False)
