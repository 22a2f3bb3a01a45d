"""A large CSV read by the columnar reader one byte slice at a time, so memory follows the
slice, not the file.

Each slice ends at a record boundary (a newline outside quotes) and carries the file's
header line again, so `reconciliation.columnar` reads it as a file of its own; its line
numbers are then moved on by the records of the slices before. The columnar grammar takes
a file only when every physical line is one record (no newline inside a quoted cell, no
blank line), so it takes the whole file exactly when it takes every slice, and the
columns of the slices, one after another, are the columns of the one-slice read. When any
slice is declined the caller reads the whole file with the row parser instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

from django.conf import settings

Columns = dict[str, Any]
READ_BYTES = 1024 * 1024  # one read() of the stream; a slice is gathered from several


def slice_bytes() -> int:
    return max(1, int(settings.PAYPILOT_RECON_IMPORT_SLICE_BYTES))


def _boundary(buf: bytes | bytearray, size: int) -> int:
    """Where the slice at the start of `buf` ends: just after the last record end (a newline
    outside quotes) within `size` bytes, else after the first one beyond (a record longer
    than a slice); -1 when `buf` holds no record end. `buf` begins at a record start, so a
    newline ends a record when the quotes before it are even in number ("" counts twice)."""
    pos = min(size, len(buf))
    quotes = buf.count(b'"', 0, pos)
    while True:  # backwards from `size`
        newline = buf.rfind(b"\n", 0, pos)
        if newline < 0:
            break
        quotes -= buf.count(b'"', newline, pos)
        if quotes % 2 == 0:
            return newline + 1
        pos = newline
    pos = min(size, len(buf)) - 1
    quotes = buf.count(b'"', 0, pos + 1)
    while True:  # forwards from `size`
        newline = buf.find(b"\n", pos + 1)
        if newline < 0:
            return -1
        quotes += buf.count(b'"', pos + 1, newline)
        if quotes % 2 == 0:
            return newline + 1
        pos = newline


def record_slices(stream: IO[bytes], size: int) -> Iterator[bytes]:
    """The file as header + about `size` bytes of whole records, slice after slice (one
    slice, the header alone, for a file with no body)."""
    buf = bytearray()
    eof = False

    def fill(wanted: int) -> None:
        nonlocal eof
        while not eof and len(buf) < wanted:
            chunk = stream.read(max(READ_BYTES, wanted - len(buf)))
            if chunk:
                buf.extend(chunk)
            else:
                eof = True

    fill(READ_BYTES)
    header_end = _boundary(buf, 0)
    while header_end < 0 and not eof:
        fill(len(buf) + READ_BYTES)
        header_end = _boundary(buf, 0)
    if header_end < 0:  # one record, no newline after it
        yield bytes(buf)
        return
    header = bytes(buf[:header_end])
    del buf[:header_end]
    sent = False
    while True:
        fill(size + 1)
        if not buf:
            break
        cut = len(buf) if eof and len(buf) <= size else _boundary(buf, size)
        while cut < 0:  # a record longer than what is buffered: gather more
            if eof:
                cut = len(buf)
            else:
                fill(len(buf) + READ_BYTES)
                cut = _boundary(buf, size)
        yield header + bytes(buf[:cut])
        sent = True
        del buf[:cut]
    if not sent:
        yield header


def sliced_columns(
    stream: IO[bytes], convert: Callable[[bytes], Columns | None], *, size: int | None = None,
) -> Iterator[Columns | None]:
    """Each slice's canonical columns with file-wide line numbers; None for a declined slice
    (the caller then stops and reads the file with the row parser)."""
    offset = 0
    for piece in record_slices(stream, size or slice_bytes()):
        columns = convert(piece)
        if columns is None:
            yield None
            return
        if offset:
            columns["line"] = columns["line"] + offset
        offset += len(columns["line"])
        yield columns
