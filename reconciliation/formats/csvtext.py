"""CSV text of an export: decoding, the header's normal form and key, the delimiter, lazy rows."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator

from reconciliation.formats.base import REASON_BAD_ENCODING, REASON_EMPTY_FILE, FileRefused


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text", line=None) from exc


def normalise_header(header: str) -> str:
    return " ".join(header.strip().strip('"').lower().split())


def sniff_delimiter(first_line: str) -> str:
    """The candidate that splits the header into the most cells (ties: , then ; then tab)."""
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts.values())
    return next(d for d in (",", ";", "\t", "|") if counts[d] == best) if best else ","


def text_stream(data: bytes) -> io.TextIOBase:
    """The bytes as UTF-8 text read lazily: a 200 MB export is not held twice (bytes and str)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


def csv_rows(text: str | io.TextIOBase, delimiter: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and an iterator of (line number, cells), blank lines skipped."""
    reader = csv.reader(io.StringIO(text) if isinstance(text, str) else text, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration as exc:
        raise FileRefused(REASON_EMPTY_FILE, "the file is empty") from exc
    except UnicodeDecodeError as exc:
        raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text", line=1) from exc

    def body() -> Iterator[tuple[int, list[str]]]:
        try:
            for cells in reader:
                if not any(cells) or not "".join(cells).strip():  # any() first: the cheap test
                    continue
                yield reader.line_num, cells
        except UnicodeDecodeError as exc:
            raise FileRefused(REASON_BAD_ENCODING, "the file is not UTF-8 text",
                              line=reader.line_num + 1) from exc

    return header, body()


def header_key(header: list[str]) -> str:
    return hashlib.sha256("\x1f".join(normalise_header(h) for h in header).encode()).hexdigest()
