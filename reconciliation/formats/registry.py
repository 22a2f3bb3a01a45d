"""The registry of recognised file formats: every module of this package that defines `READER`.

A new format is one new module here: its reader functions and a `READER = Reader(...)`.
`readers()` finds it by listing the package, so no other file names it. A file that no
reader recognises is read through the tenant's confirmed layout for its header
(`reconciliation.formats.layout`), which needs the database and so is not a reader here.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

from reconciliation.formats.base import Parsed
from reconciliation.formats.csvtext import csv_rows, decode

HEAD_BYTES = 65536  # how much of a file a reader may look at to recognise it


class Sample:
    """An uploaded file as the readers look at it; the head is decoded only when a reader
    asks (an XML statement is recognised from its bytes and may not be UTF-8 at all)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    @functools.cached_property
    def head(self) -> str:
        """The first 64 KiB as text, cut at a line end (the body is decoded as it is read)."""
        data = self.data
        return decode(data[:HEAD_BYTES].rsplit(b"\n", 1)[0] if len(data) > HEAD_BYTES else data)

    @functools.cached_property
    def first_line(self) -> str:
        return self.head.split("\n", 1)[0]

    @functools.cached_property
    def header(self) -> list[str]:
        """The first line's cells split on commas (FileRefused empty_file when it is blank)."""
        return csv_rows(self.first_line, ",")[0]


@dataclass(frozen=True)
class Reader:
    """One recognised format: how to tell it from its first bytes and how to read it."""

    file_format: str  # stored on the import (ImportFile.file_format)
    kind: str  # the only kind such a file imports as
    order: int  # readers are asked in this order: the cheapest, most specific test first
    recognises: Callable[[Sample], bool]
    read: Callable[[Sample], Parsed]
    wrong_kind: str  # the refusal's message when the file is uploaded as another kind


@functools.lru_cache(maxsize=1)
def readers() -> tuple[Reader, ...]:
    """Every `READER` defined by a module of this package, in their `order`."""
    found = []
    # The package's own path list (not this file's folder), so a module on any of its paths counts.
    for module in pkgutil.iter_modules(sys.modules[__package__].__path__):
        reader = getattr(importlib.import_module(f"{__package__}.{module.name}"), "READER", None)
        if isinstance(reader, Reader):
            found.append(reader)
    return tuple(sorted(found, key=lambda r: r.order))


def recognise(sample: Sample) -> Reader | None:
    """The first reader that recognises the file, or None (then a confirmed layout reads it)."""
    return next((reader for reader in readers() if reader.recognises(sample)), None)
