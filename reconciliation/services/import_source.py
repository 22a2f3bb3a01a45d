"""An import's bytes, in memory or at a path: hashed and checked in one streamed pass, the
head for recognising it, slices for the columnar reader, the whole only for a row parser."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from reconciliation.formats.registry import HEAD_BYTES

READ_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Source:
    data: bytes | None = None
    path: Path | None = None

    @classmethod
    def of(cls, *, data: bytes | None, path: str | Path | None) -> Source:
        if (data is None) == (path is None):
            raise TypeError("give exactly one of data and path")
        return cls(data=data, path=None if path is None else Path(path))

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else self.path.stat().st_size  # type: ignore[union-attr]

    def open(self) -> IO[bytes]:
        return io.BytesIO(self.data) if self.data is not None else self.path.open("rb")  # type: ignore[union-attr]

    def digest_and_blank(self) -> tuple[str, bool]:
        """The file's sha256, and whether it is empty or whitespace only (one pass)."""
        if self.data is not None:
            # isspace(), not strip(): strip would copy the whole file to learn the same.
            return hashlib.sha256(self.data).hexdigest(), not self.data or self.data.isspace()
        sha, blank = hashlib.sha256(), True
        with self.open() as handle:
            while chunk := handle.read(READ_BYTES):
                sha.update(chunk)
                blank = blank and chunk.isspace()
        return sha.hexdigest(), blank

    def head(self) -> bytes:
        """Enough of the start for every reader's `recognises` (a Sample of it has the same
        head as one of the whole file: one byte more than HEAD_BYTES says "cut here")."""
        if self.data is not None:
            return self.data[:HEAD_BYTES + 1]
        with self.open() as handle:
            return handle.read(HEAD_BYTES + 1)

    def read_all(self) -> bytes:
        """The whole file: only for the row parsers (XML, BAI2, a CSV the columnar reader declined)."""
        if self.data is not None:
            return self.data
        return self.path.read_bytes()  # type: ignore[union-attr]
