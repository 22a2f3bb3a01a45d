"""A file handed to a tool: its text, its bytes in base64, or (stdio only) a path inside the operator's file root."""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Annotated

from django.conf import settings
from pydantic import Field

from .scope import REASON_INVALID, TRANSPORT_STDIO, Caller, ToolRefused

# A path is a way for a model, steered by whatever document it last read, to ask for any
# file the server process can open: so it is read only over stdio, only inside the one
# directory the operator names, and only after symlinks and `..` are resolved.
REASON_PATH_OVER_HTTP = "path_not_allowed_over_http"  # /mcp never reads the server's disk
REASON_NO_FILE_ROOT = "file_root_not_set"  # PAYPILOT_MCP_FILE_ROOT is empty: content only
REASON_OUTSIDE_ROOT = "path_outside_root"  # resolves outside PAYPILOT_MCP_FILE_ROOT
LocalPath = Annotated[str | None, Field(description="or, over stdio only: a path inside the folder the operator "
                                                    "named (PAYPILOT_MCP_FILE_ROOT), relative to it")]


def _inside_root(path: str) -> Path:
    """The real file `path` names, refused unless it lies inside PAYPILOT_MCP_FILE_ROOT once
    every symlink and `..` is resolved. A relative path is taken from the root."""
    configured = settings.PAYPILOT_MCP_FILE_ROOT
    if not configured:
        raise ToolRefused(REASON_NO_FILE_ROOT, "this server reads no paths (PAYPILOT_MCP_FILE_ROOT is not set); send "
                          "the file as content or content_base64", argument="path")
    root = Path(configured).expanduser().resolve()
    file = (root / Path(path).expanduser()).resolve()  # an absolute `path` replaces root here
    if not file.is_relative_to(root) or file == root:
        raise ToolRefused(REASON_OUTSIDE_ROOT, "path is outside the folder this server may read "
                          "(PAYPILOT_MCP_FILE_ROOT)", argument="path")
    if not file.is_file():
        raise ToolRefused(REASON_INVALID, "no such file in the folder this server may read", argument="path")
    return file


def _read(file: Path, limit: int) -> bytes:
    # O_NOFOLLOW: the resolved name must not have become a symlink since it was checked.
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ToolRefused("file_too_large", f"the file has more than {limit} bytes; the limit is {limit}")
    return data


def file_bytes(who: Caller, *, content: str | None, content_base64: str | None, path: str | None) -> bytes:
    """Exactly one source. A path is read only over stdio, where the server runs on the
    operator's own machine, and only inside PAYPILOT_MCP_FILE_ROOT."""
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
            raise ToolRefused(REASON_INVALID, "content_base64 is not valid base64", argument="content_base64") from None
    else:
        if who.transport != TRANSPORT_STDIO:
            raise ToolRefused(REASON_PATH_OVER_HTTP, "path is never read over HTTP; send content or content_base64",
                              argument="path")
        data = _read(_inside_root(str(path)), limit)
    if len(data) > limit:
        raise ToolRefused("file_too_large", f"the file has {len(data)} bytes; the limit is {limit}")
    return data
