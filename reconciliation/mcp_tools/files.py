"""A file handed to a tool: its text, its bytes in base64, or (stdio only) a local path."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from django.conf import settings

from .scope import REASON_INVALID, TRANSPORT_STDIO, Caller, ToolRefused


def file_bytes(who: Caller, *, content: str | None, content_base64: str | None, path: str | None) -> bytes:
    """Exactly one source. A path is read only over stdio, where the server runs on the
    operator's own machine; over HTTP it would read the server's disk, so it is refused."""
    given = [name for name, value in (("content", content), ("content_base64", content_base64), ("path", path))
             if value is not None]
    if len(given) != 1:
        raise ToolRefused(REASON_INVALID, "give exactly one of content (text), content_base64 or path (stdio only)")
    limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
    if content is not None:
        data = content.encode("utf-8")
    elif content_base64 is not None:
        try:
            data = base64.b64decode(content_base64, validate=True)
        except (binascii.Error, ValueError):
            raise ToolRefused(REASON_INVALID, "content_base64 is not valid base64", field="content_base64") from None
    else:
        if who.transport != TRANSPORT_STDIO:
            raise ToolRefused(REASON_INVALID, "path is read only over stdio; over HTTP send content or "
                              "content_base64", field="path")
        file = Path(str(path)).expanduser()
        if not file.is_file():
            raise ToolRefused(REASON_INVALID, f"no such file: {file}", field="path")
        if file.stat().st_size > limit:
            raise ToolRefused("file_too_large", f"the file has {file.stat().st_size} bytes; the limit is {limit}")
        data = file.read_bytes()
    if len(data) > limit:
        raise ToolRefused("file_too_large", f"the file has {len(data)} bytes; the limit is {limit}")
    return data
