"""The extractor over the whole pricing-document corpus: the bars of issue 31."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from reconciliation.evals.contract_eval import contract_documents, contract_eval_all

MIN_ACCURACY = 0.95


def test_the_corpus_is_varied() -> None:
    documents = contract_documents()
    assert len(documents) >= 15
    suffixes = {path.suffix for path, _ in documents}
    assert {".md", ".html", ".pdf", ".txt"} <= suffixes
    currencies = {t["unit"] for _, e in documents for t in e["terms"].values()
                  if t and t["unit"] not in ("percent", "days", "business_days")}
    assert len(currencies) >= 5
    for path, _ in documents:
        if path.suffix == ".pdf":
            assert path.read_bytes().startswith(b"%PDF-")


def test_at_least_95_percent_of_terms_right_and_no_wrong_value_confirmable() -> None:
    result = contract_eval_all()
    failing = [(d["document"], r["term"], r["expected"], r["got"], r["verdict"]) for d in result["documents"]
               for r in d["rows"] if r["verdict"] not in ("right", "right (absent)")]
    assert result["accuracy"] >= MIN_ACCURACY, failing
    assert result["wrong_confirmable"] == 0, failing


def test_recon_contract_eval_prints_a_table_per_document_and_the_totals() -> None:
    out = StringIO()
    call_command("recon_contract", "eval", stdout=out)
    text = out.getvalue()
    for path, _ in contract_documents():
        assert path.name in text
    assert "term" in text and "expected" in text and "verdict" in text
    assert "terms right:" in text.splitlines()[-1]
    out = StringIO()
    call_command("recon_contract", "eval", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["total"] == 6 * len(contract_documents())
