"""The pricing-document corpus scored: every document read, extracted and checked like a proposal.

`contracts/` holds pricing documents written in the styles processors publish (Markdown,
HTML, text PDF; US, EU, UK, German, French and Spanish wording; tables and prose; several
currencies; card tiers), each with `<name>.expected.json`: the terms a careful reader takes
from it, written by hand from the document (null: the document states no such term).
A term is right when the extractor's value (and unit, and holding period when expected)
equals the expected one and verification passed it, or when both say the term is absent.
`wrong_confirmable` counts wrong values in a document that would be `confirmable`: it must
stay 0. `manage.py recon_contract eval` prints the table; `tests/test_contract_corpus.py`
holds the bars.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from reconciliation.documents import document_text
from reconciliation.extraction import TERMS, terms_extract
from reconciliation.verification import terms_verify

CONTRACTS_DIR = Path(__file__).resolve().parent / "contracts"
DOCUMENT_SUFFIXES = (".md", ".html", ".txt", ".pdf")

RIGHT = "right"
RIGHT_ABSENT = "right (absent)"
WRONG = "wrong"  # a value other than the expected one
MISSED = "missed"  # expected, not read
SPURIOUS = "spurious"  # read where the document states no such term
REFUSED = "refused"  # the right value, but verification refused it (the person cannot confirm it)


def contract_documents() -> list[tuple[Path, dict[str, Any]]]:
    """(document, expected) for every document of the corpus with its expectations."""
    out = []
    for path in sorted(CONTRACTS_DIR.iterdir()):
        expected = CONTRACTS_DIR / f"{path.stem}.expected.json"
        if path.suffix in DOCUMENT_SUFFIXES and expected.exists():
            out.append((path, json.loads(expected.read_text(encoding="utf-8"))))
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return Decimal(str(a)) == Decimal(str(b))
    except (InvalidOperation, ValueError):
        return a == b


def _verdict(want: dict[str, Any] | None, got: dict[str, Any] | None) -> str:
    if want is None:
        return RIGHT_ABSENT if got is None or got["value"] is None else SPURIOUS
    if got is None or got["value"] is None:
        return MISSED
    if not (_same(want["value"], got["value"]) and want["unit"] == got["unit"]
            and ("holding_days" not in want or _same(want["holding_days"], got.get("holding_days")))):
        return WRONG
    return RIGHT if got["verified"] else REFUSED


def contract_document_eval(path: Path, expected: dict[str, Any]) -> dict[str, Any]:
    """One document: a row per term (term, expected, got, verdict, reason) and its counts."""
    _format, text = document_text(path.read_bytes(), path.name)
    checked = terms_verify(text=text, extraction=terms_extract(text))
    rows = []
    for name in TERMS:
        want = expected["terms"].get(name)
        got = checked.terms.get(name)
        verdict = _verdict(want, got)
        rows.append({"term": name, "expected": None if want is None else f"{want['value']} {want['unit']}",
                     "got": None if got is None or got["value"] is None else f"{got['value']} {got['unit']}",
                     "verdict": verdict, "reason": got["reason_code"] if got and not got["verified"] else None})
    wrong = sum(r["verdict"] in (WRONG, SPURIOUS) for r in rows)
    return {"document": path.name, "style": expected.get("style", ""), "rows": rows,
            "right": sum(r["verdict"] in (RIGHT, RIGHT_ABSENT) for r in rows), "total": len(rows),
            "confirmable": checked.confirmable, "wrong_confirmable": wrong if checked.confirmable else 0}


def contract_eval_all() -> dict[str, Any]:
    documents = [contract_document_eval(path, expected) for path, expected in contract_documents()]
    right, total = sum(d["right"] for d in documents), sum(d["total"] for d in documents)
    return {"documents": documents, "right": right, "total": total,
            "accuracy": round(right / total, 4) if total else 0.0,
            "confirmable": sum(d["confirmable"] for d in documents),
            "wrong_confirmable": sum(d["wrong_confirmable"] for d in documents)}


def contract_eval_table(result: dict[str, Any]) -> str:
    """The printed form: a table per document, then the totals."""
    lines = []
    for doc in result["documents"]:
        lines.append(f"{doc['document']}  ({doc['style']})  {doc['right']}/{doc['total']}"
                     f"{'  confirmable' if doc['confirmable'] else ''}")
        lines.append(f"  {'term':<25} {'expected':<18} {'got':<18} verdict")
        for row in doc["rows"]:
            reason = f" ({row['reason']})" if row["reason"] else ""
            lines.append(f"  {row['term']:<25} {row['expected'] or '-':<18} {row['got'] or '-':<18} "
                         f"{row['verdict']}{reason}")
        lines.append("")
    lines.append(f"documents: {len(result['documents'])}  terms right: {result['right']}/{result['total']} "
                 f"({result['accuracy']:.1%})  confirmable: {result['confirmable']}  "
                 f"wrong values in a confirmable proposal: {result['wrong_confirmable']}")
    return "\n".join(lines)
