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


def _last_boundary(buf: bytes | bytearray, start: int) -> int:
    """The index just after the last newline of `buf` outside quotes (a record end), or -1.
    `buf` begins at a record start, so a newline ends a record when the quotes before it are
    even in number ("" inside a quoted cell counts twice)."""
    quotes = buf.count(b'"')
    pos = len(buf)
    while True:
        pos = buf.rfind(b"\n", start, pos)
        if pos < 0:
            return -1
        if quotes == 0 or (quotes - buf.count(b'"', pos)) % 2 == 0:
            return pos + 1


def record_slices(stream: IO[bytes], size: int) -> Iterator[bytes]:
    """The file as header + about `size` bytes of whole records, slice after slice (one
    slice, the header alone, for a file with no body)."""
    buf = bytearray()
    header_end = -1
    while header_end < 0:
        chunk = stream.read(READ_BYTES)
        if not chunk:
            break
        buf += chunk
        header_end = _first_boundary(buf)
    if header_end < 0:  # one record, no newline after it
        yield bytes(buf)
        return
    header = bytes(buf[:header_end])
    del buf[:header_end]
    sent = False
    eof = False
    while not eof or buf:
        while not eof and len(buf) < size:
            chunk = stream.read(max(READ_BYTES, size - len(buf)))
            if chunk:
                buf += chunk
            else:
                eof = True
        if eof:
            cut = len(buf)
        else:
            cut = _last_boundary(buf, 0)
            if cut <= 0:  # one record longer than a slice: gather more
                more = stream.read(READ_BYTES)
                if more:
                    buf += more
                else:
                    eof = True
                continue
        if cut == 0:
            break
        yield header + bytes(buf[:cut])
        sent = True
        del buf[:cut]
    if not sent:
        yield header


def _first_boundary(buf: bytes | bytearray) -> int:
    pos = -1
    while True:
        pos = buf.find(b"\n", pos + 1)
        if pos < 0:
            return -1
        if buf.count(b'"', 0, pos) % 2 == 0:
            return pos + 1


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
