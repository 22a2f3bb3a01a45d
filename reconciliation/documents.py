"""A pricing document as text: plain text, Markdown, HTML (tables as `cell | cell` rows) or a text PDF.

The text returned here is what the extractor and the model read and what every quote is
checked against, so each format is turned into text one deterministic way. PDFs go through
pypdf (text layer only: a scanned PDF is refused with `pdf_no_text`, never guessed at).
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

from reconciliation.services.contracts import ContractRefused

UNSUPPORTED_DOCUMENT = "unsupported_document"  # not text, Markdown, HTML or PDF (or not decodable)
PDF_UNREADABLE = "pdf_unreadable"  # pypdf could not open it (damaged, encrypted with a password)
PDF_NO_TEXT = "pdf_no_text"  # a PDF without a text layer (a scan): nothing to quote from
EMPTY_DOCUMENT = "empty_document"  # no text at all
DOCUMENT_TOO_LONG = "document_too_long"  # more text than a pricing schedule has
MAX_PDF_PAGES = 100  # a pricing schedule is a few pages; more is not one (and costs time to parse)
# About 75 dense pages of text. A schedule of fees is far shorter; a longer text is an archive
# or a whole agreement, and reading it would hold a request for tens of seconds.
MAX_TEXT_CHARS = 300_000
MAX_HTML_BYTES = 5 * 1024 * 1024  # a saved web page with its scripts and styles inline

_BLOCK_TAGS = frozenset({
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "thead", "tbody", "tfoot", "h1", "h2", "h3", "h4", "h5",
    "h6", "section", "article", "header", "footer", "dt", "dd", "dl", "caption", "blockquote", "pre", "hr",
    "main", "aside", "figcaption", "summary", "details",
})
_CELL_TAGS = frozenset({"td", "th"})
_SKIPPED_TAGS = frozenset({"script", "style", "head", "template", "noscript", "svg"})


class _HtmlText(HTMLParser):
    """Visible text: a line per block, table cells joined by ` | `, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[list[str]] = [[]]
        self.cells: list[str] | None = None  # cells of the current table row
        self.skipping = 0

    def _text(self, data: str) -> None:
        if self.cells is not None and self.cells:
            self.cells[-1] += data
        else:
            self.lines[-1].append(data)

    def _end_line(self) -> None:
        if self.lines[-1]:
            self.lines.append([])

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self.skipping += 1
        elif tag == "tr":
            self._end_line()
            self.cells = []
        elif tag in _CELL_TAGS:
            if self.cells is None:
                self.cells = []
            self.cells.append("")
        elif tag in _BLOCK_TAGS:
            self._flush_row()
            self._end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skipping = max(0, self.skipping - 1)
        elif tag in ("tr", "table"):
            self._flush_row()
            self._end_line()
        elif tag in _BLOCK_TAGS:
            self._end_line()

    def _flush_row(self) -> None:
        if self.cells:
            self.lines[-1].append(" | ".join(" ".join(c.split()) for c in self.cells))
        self.cells = None

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self._text(data)

    def text(self) -> str:
        self._flush_row()
        return "\n".join(" ".join("".join(parts).split()) for parts in self.lines if "".join(parts).strip())


def html_to_text(html: str) -> str:
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    return parser.text()


def pdf_to_text(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ContractRefused(PDF_UNREADABLE, "the PDF is protected by a password")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise ContractRefused(PDF_UNREADABLE, f"the PDF has {len(reader.pages)} pages; at most "
                                  f"{MAX_PDF_PAGES} are read")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ContractRefused:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ContractRefused(PDF_UNREADABLE, f"the PDF could not be read ({type(exc).__name__})") from exc
    text = "\n".join(pages)
    if not text.strip():
        raise ContractRefused(PDF_NO_TEXT, "the PDF has no text layer (a scan?); export it as text or OCR it first")
    return text


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        # Windows-1252 is what a pricing sheet saved by an older office suite usually is.
        return data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise ContractRefused(UNSUPPORTED_DOCUMENT, "the document is neither UTF-8 nor Windows-1252 text") from exc


_HTML_SNIFF = re.compile(r"(?is)^\s*(?:<!doctype html|<html|<head|<body|<table|<div|<p[\s>]|<h[1-6][\s>])")


def document_text(data: bytes, filename: str) -> tuple[str, str]:
    """(format, text) of a document: format is `pdf`, `html`, `markdown` or `text`.

    Raises ContractRefused (`unsupported_document`, `pdf_unreadable`, `pdf_no_text`,
    `empty_document`, `document_too_long`)."""
    name = filename.lower()
    if data[:5] == b"%PDF-" or name.endswith(".pdf"):
        if data[:5] != b"%PDF-":
            raise ContractRefused(UNSUPPORTED_DOCUMENT, "the file is named .pdf but is not a PDF")
        doc_format, text = "pdf", pdf_to_text(data)
    else:
        if b"\x00" in data[:4096]:
            raise ContractRefused(UNSUPPORTED_DOCUMENT, "a binary file: give text, Markdown, HTML or a text PDF")
        raw = _decode(data)
        if name.endswith((".html", ".htm", ".xhtml")) or _HTML_SNIFF.match(raw):
            if len(data) > MAX_HTML_BYTES:
                raise ContractRefused(DOCUMENT_TOO_LONG, f"the page has {len(data)} bytes; at most {MAX_HTML_BYTES} "
                                      "are read (save the pricing part only)")
            doc_format, text = "html", html_to_text(raw)
        elif name.endswith((".md", ".markdown")):
            doc_format, text = "markdown", raw
        else:
            doc_format, text = "text", raw
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ContractRefused(EMPTY_DOCUMENT, "the document holds no text")
    if len(text) > MAX_TEXT_CHARS:
        raise ContractRefused(DOCUMENT_TOO_LONG, f"the document has {len(text)} characters of text; at most "
                              f"{MAX_TEXT_CHARS} are read (give the schedule of fees, not the whole agreement)")
    return doc_format, text
