"""Writes the corpus's text PDFs from `pdf_sources/*.txt`: `python reconciliation/evals/contracts/pdf_make.py`.

A minimal PDF 1.4 writer (Helvetica, WinAnsiEncoding, one text line per source line, pages of
60 lines) so the PDFs have a real text layer that pypdf reads like a processor's exported
price list, without a PDF library as a dependency. The generated .pdf files are committed;
run this again after editing a source.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
LINES_PER_PAGE = 60


def _escape(line: str) -> bytes:
    raw = line.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def pdf_bytes(text: str) -> bytes:
    """A PDF whose pages show `text`, one line per line."""
    lines = text.rstrip("\n").split("\n")
    pages = [lines[i:i + LINES_PER_PAGE] for i in range(0, len(lines), LINES_PER_PAGE)] or [[]]
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: pages (filled in below)
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for page_lines in pages:
        ops = [b"BT /F1 10 Tf 12 TL 50 790 Td"]
        for line in page_lines:
            ops.append(b"(" + _escape(line) + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content = len(objects)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content, font))
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def main() -> None:
    for source in sorted((HERE / "pdf_sources").glob("*.txt")):
        (HERE / f"{source.stem}.pdf").write_bytes(pdf_bytes(source.read_text(encoding="utf-8")))
        print(f"wrote {source.stem}.pdf")


if __name__ == "__main__":
    main()
